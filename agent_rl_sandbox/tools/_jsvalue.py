"""JavaScript's reading of JSON values, as Port Daddy's harness (Node) applies it: import-light.

``String()``, ``Number()``, ``Number.prototype.toString``, ``JSON.stringify`` (key order, number text,
escapes), ``String.prototype.includes`` on UTF-16 code units, ``toFixed(3)`` rounding, and this
project's text of a ``finalState``. Stdlib only (no pydantic), so both the model-based scorer
(``tools.evals._port_daddy``) and the plain-data suite scorer (``tools._suite_fast``) use one copy.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from json.encoder import encode_basestring  # the C encoder json.dumps uses
from typing import Any

FINAL_TEXT_FIELDS = ("text", "summary", "message", "content", "output", "result")
_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def round3(x: float) -> float:
    """Round half-up to 3 decimals on the exact binary value (JavaScript's ``toFixed(3)``)."""
    return float(Decimal(x).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def js_number(value: int | float) -> float:
    """JavaScript's ``Number()`` of a JSON number: the nearest double (``inf`` past the double range)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def js_number_text(x: float) -> str:
    """``Number.prototype.toString()``: shortest round-trip digits, exponent past 1e21 and below 1e-6."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"  # -0 too
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")  # repr: the shortest digits that round-trip, as in JS
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac
    digits = raw.lstrip("0")
    n = len(whole) + int(exp or 0) - (len(raw) - len(digits))  # x = 0.DIGITS * 10**n
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    return sign + digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e >= 0 else "e-") + str(abs(e))


def js_string(value: Any) -> str:
    """JavaScript's ``String()`` of a JSON value: ``true``, ``1`` for 1.0, ``a,b`` for a list,
    ``[object Object]`` for an object, ``null`` for null."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number_text(js_number(value))
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)  # Array.prototype.join
    return "[object Object]"


def _js_quote(text: str) -> str:
    # json.dumps escapes what JSON.stringify escapes, with the same lowercase \u00xx, except lone
    # surrogates, which JSON.stringify writes as \udxxx (Python keeps pairs as one character).
    # encode_basestring is the function json.dumps(text, ensure_ascii=False) calls, without its overhead.
    out = encode_basestring(text)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out) if _SURROGATE.search(out) else out


def _js_keys(obj: dict) -> list:
    """Own keys in JavaScript order: array indices (0 .. 2**32-2) ascending, then the rest as given."""
    index = [k for k in obj if _INDEX_KEY.fullmatch(k) and int(k) < 2**32 - 1]
    if not index:
        return list(obj)
    return sorted(index, key=int) + [k for k in obj if k not in set(index)]


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` of a JSON value: no spaces, JavaScript key order and number text,
    non-finite numbers as ``null``, non-ASCII kept, lone surrogates escaped."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        x = js_number(value)
        return js_number_text(x) if math.isfinite(x) else "null"
    if isinstance(value, str):
        return _js_quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_js_quote(k) + ":" + js_json(value[k]) for k in _js_keys(value)) + "}"
    return _js_quote(str(value))


def js_includes(haystack: str, needle: str) -> bool:
    """``haystack.includes(needle)`` on UTF-16 code units: a lone-surrogate needle can match half of
    a pair (Python's ``in`` compares code points)."""
    if not _SURROGATE.search(needle):
        return needle in haystack  # a well-formed needle matches code units where it matches code points
    hay, sub = haystack.encode("utf-16-le", "surrogatepass"), needle.encode("utf-16-le", "surrogatepass")
    i = hay.find(sub)
    while i != -1 and i % 2:
        i = hay.find(sub, i + 1)
    return i != -1


def final_state_text(final_state: Any) -> tuple[str, str | None]:
    """(text, kind) of a ``finalState``: ``String(finalState ?? '')``, except that an object's text
    fields are joined (this project's reading; JavaScript gives ``[object Object]``)."""
    if final_state is None:
        return "", None
    if isinstance(final_state, dict):
        parts = [
            js_string(final_state[k]) for k in FINAL_TEXT_FIELDS if isinstance(final_state.get(k), (str, int, float))
        ]
        kind = final_state.get("kind")
        return "\n".join(parts), kind if isinstance(kind, str) else None
    return js_string(final_state), None

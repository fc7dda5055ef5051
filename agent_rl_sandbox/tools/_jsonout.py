"""Indented, key-sorted JSON bytes, byte for byte the json module's: import-light (orjson, stdlib).

:func:`dumps_indented` writes one value as ``json.dumps(value, sort_keys=True, indent=2,
ensure_ascii=False, allow_nan=False)`` would, nested at a given indent level, so a large report can
be written piece by piece (``tools._suite_fast``) with the same bytes as one ``json.dumps`` of the
whole (``tools.evals._report.report_json_bytes``). orjson writes it when its text is the json
module's (:func:`float_forms_differ`); the json module otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_SMALL_FLOAT_HINT = re.compile(rb"e-[0-9]|0\.0000")
_NUMBER_CHARS = frozenset(b"0123456789.")


def float_forms_differ(out: bytes) -> bool:
    """True when orjson's indented ``out`` may hold a float the json module writes differently.

    They differ only below 1e-4 (json writes ``1e-05``, orjson ``0.00001``), so this looks for a
    number token (after ``": `` or at the start of an indented line) holding ``e-`` or ``0.0000``.
    Conservative: text inside a string that looks like such a token also answers True (the caller
    then writes with the json module, which is exact)."""
    if b"e-" not in out and b"0.0000" not in out:
        return False  # the common case, found by two substring scans
    for m in _SMALL_FLOAT_HINT.finditer(out):
        j = m.start()
        while j > 0 and out[j - 1] in _NUMBER_CHARS:
            j -= 1
        if j > 0 and out[j - 1] == 45:  # "-"
            j -= 1
        if out[max(0, j - 3) : j] == b'": ':
            return True
        k = j
        while k > 0 and out[k - 1] == 32:
            k -= 1
        if k > 0 and out[k - 1] == 10 and k < j:
            return True
    return False


_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def dumps_indented(value: Any, level: int = 0) -> bytes:
    """``json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)`` as UTF-8,
    with every line after the first indented by ``2 * level`` more spaces (the text of ``value``
    nested ``level`` deep in an indented document). Raises ``ValueError`` for NaN or infinity and
    ``TypeError`` for a value JSON cannot hold, as ``json.dumps`` does."""
    try:
        out = orjson.dumps(value, option=_OPTS)
    except (TypeError, ValueError):  # an integer beyond 64 bits, a lone surrogate: the json module
        out = None
    if out is None or float_forms_differ(out):
        text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
        out = text.encode("utf-8")
    # a JSON string never holds a raw newline, so every newline is a line break of the layout
    return out.replace(b"\n", b"\n" + b"  " * level) if level and b"\n" in out else out

"""``json.loads`` of a short text (a tool call's arguments, a tool output), read by orjson where orjson's
reading is the json module's: the same value, or the json module's own error.

orjson (about 3-5x faster on such texts) reads exactly what the json module reads, with these
differences, each sent to the json module instead: integers beyond 64 bits (orjson reads them as floats:
any text holding 19 digits in a row), what orjson refuses and the json module reads (NaN and Infinity,
lone surrogate escapes, numbers beyond the float range; the json module's value then) or refuses too
(its error then), and values nested deeper than orjson writes (254 levels; the json module's reading
and limits then). Duplicate keys read alike (the last value, at the first key's place); so do floats
(both correctly rounded), ``-0``, whitespace and escapes (tested against the json module).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(r"[0-9]{19}")
_DEPTH = 254
"""orjson writes values nested at most this deep; text with fewer brackets cannot nest deeper."""


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same exception (``ValueError``, ``RecursionError``)."""
    if len(text) < 19 or _LONG_DIGITS.search(text) is None:
        try:
            value = orjson.loads(text)
        except (ValueError, TypeError):  # what orjson refuses (a str subclass too): the json module reads or refuses
            return json.loads(text)
        if text.count("[") + text.count("{") < _DEPTH:
            return value
        try:
            orjson.dumps(value)  # raises beyond 254 levels: then the json module's reading (its own limits)
            return value
        except TypeError:
            pass
    return json.loads(text)

"""``tools.formats._json.loads`` (orjson where its reading is the json module's) reads every text as
``json.loads`` does: the same value (types included: an integer stays an integer, ``-0.0`` stays
negative) or an exception of the same type."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rl_sandbox.tools.formats._json import loads


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _outcome(f, text):
    try:
        return "ok", f(text)
    except (ValueError, RecursionError) as e:
        return "error", type(e)


def _check(text: str) -> None:
    (ka, va), (kb, vb) = _outcome(json.loads, text), _outcome(loads, text)
    assert ka == kb, (text[:80], va, vb)
    assert (va is vb) if ka == "error" else _same(va, vb), (text[:80], va, vb)


EDGES = [
    '{"command": ["bash", "-lc", "pytest -q"]}',
    '{"output": "1 passed", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}',
    "-0",
    "-0.0",
    "1e400",
    "-1e400",
    "NaN",
    "[Infinity, -Infinity]",
    "12345678901234567890",
    "-9223372036854775809",
    "18446744073709551616",
    "[1234567890123456789, 0.1234567890123456789]",
    '"\\ud800"',
    '"\\ud83d\\ude00 \\u00e9 \\n \\" \\\\ \\/"',
    '{"a": 1, "a": 2, "b": 3}',
    ' \t\n{"a": [1, 2.5e-7, 1E5, true, false, null]}\r\n',
    "\ufeff{}",
    '{"a": 1} {"b": 2}',
    "",
    "  ",
    '{"a": 1,}',
    '"\x01"',
    "[" * 253 + "]" * 253,
    "[" * 300 + "]" * 300,
    "[" * 1010 + "]" * 1010,
    '"lone \ud800 in the text itself"',
    '{"k": "é 😀 \u2028"}',
]


@pytest.mark.parametrize("text", EDGES)
def test_edge_texts_read_as_the_json_module_reads_them(text):
    _check(text)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_JSON, st.sampled_from([None, 1, 2]))
def test_generated_documents_read_as_the_json_module_reads_them(value, indent):
    _check(json.dumps(value, indent=indent))
    _check(json.dumps(value, ensure_ascii=False))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]",:0123456789.eE+-tfnrulas \\\n\ud800', max_size=30))
def test_arbitrary_texts_read_or_fail_as_with_the_json_module(text):
    _check(text)

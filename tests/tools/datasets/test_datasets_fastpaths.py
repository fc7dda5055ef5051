"""The validator's fast paths (issue 16) against their reference behaviour, case by case.

- ``Drift.walk`` (remembers row shapes) gives exactly ``Drift.walk_plain``'s findings, state and flags.
- ``_Engine._parse`` (reuses a repeated ``tools`` text) gives exactly ``parse_json_text``'s result.
- Memory stays flat: the peak at 4N rows is not above the peak at N rows (plus a small allowance).
"""

from __future__ import annotations

import json
import random
import tracemalloc
from typing import Any

import pytest

from agent_rl_sandbox.tools.datasets import validate_file
from agent_rl_sandbox.tools.datasets._dataset import Drift
from agent_rl_sandbox.tools.datasets._reader import parse_json_text
from agent_rl_sandbox.tools.datasets._validate import _Engine

# ----------------------------------------------------------------------------------------------------
# drift


def _random_value(rnd: random.Random, depth: int) -> Any:
    r = rnd.random()
    if depth > 5 or r < 0.45:
        return rnd.choice([None, True, False, 0, 1, 2.5, -3, "s", "", 10**20])
    if r < 0.75:
        keys = rnd.sample(["a", "b", "c", "d", "e", "f", "g", "h", "x y", "ü"], rnd.randint(0, 9))
        return {k: _random_value(rnd, depth + 1) for k in keys}
    return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 9))]


def _mutate(rnd: random.Random, value: Any) -> Any:
    """A copy of ``value`` with a few leaves changed (so shapes mostly repeat, sometimes drift)."""
    if isinstance(value, dict):
        return {k: (_mutate(rnd, v) if rnd.random() < 0.9 else _random_value(rnd, 4)) for k, v in value.items()}
    if isinstance(value, list):
        items = [_mutate(rnd, v) for v in value]
        if items and rnd.random() < 0.2:
            items.append(items[0])
        return items
    if isinstance(value, str):
        return value + "x"
    return value


def _state(d: Drift) -> tuple:
    return (json.dumps(d.first, sort_keys=True), d.capped, d.too_deep)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("max_paths", "max_depth"), [(4096, 24), (40, 24), (4096, 3)])
def test_walk_equals_walk_plain(seed, max_paths, max_depth):
    rnd = random.Random(seed)
    base = [_random_value(rnd, 0) for _ in range(4)]
    fast, plain = Drift(max_paths=max_paths, max_depth=max_depth), Drift(max_paths=max_paths, max_depth=max_depth)
    for line in range(1, 400):
        row = _mutate(rnd, rnd.choice(base)) if rnd.random() < 0.9 else _random_value(rnd, 0)
        out_fast: list = []
        out_plain: list = []
        fast.walk(row, line, out_fast)
        plain.walk_plain(row, line, out_plain)
        assert [(p, t, dict(s)) for p, t, s in out_fast] == [(p, t, dict(s)) for p, t, s in out_plain]
        assert _state(fast) == _state(plain)
        fast.too_deep = plain.too_deep = False


def test_walk_with_wide_rows_and_long_lists_equals_walk_plain():
    rnd = random.Random(7)
    fast, plain = Drift(), Drift()
    for line in range(1, 300):
        row = {f"k{i}": rnd.choice([1, 2.0, "s", None, True]) for i in range(rnd.randint(5, 80))}
        row["ids"] = [rnd.choice([1, 2, 3]) for _ in range(rnd.randint(0, 50))] + (["late"] if line == 250 else [])
        row["objs"] = [{"x": 1}] * rnd.randint(5, 12) + ([{"x": "s"}] if line == 260 else [])
        out_fast: list = []
        out_plain: list = []
        fast.walk(row, line, out_fast)
        plain.walk_plain(row, line, out_plain)
        assert [(p, t, dict(s)) for p, t, s in out_fast] == [(p, t, dict(s)) for p, t, s in out_plain]
        assert _state(fast) == _state(plain)


def test_shape_memory_is_bounded():
    d = Drift(max_shapes=10)
    for i in range(200):
        d.walk({f"k{j}": (i >> j) & 1 == 1 or j for j in range(8)}, i + 1, [])
    assert d._n_shapes <= 10


# ----------------------------------------------------------------------------------------------------
# the repeated-tools parse

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
TOOLS_TEXT = json.dumps(TOOLS)
MSGS = '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]'


def _learned_engine() -> _Engine:
    engine = _Engine(kind=None, max_errors=50, tokenizer=None, max_length=None, report_path=None)
    for line in (1, 2):
        engine.text_row(line, f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}}}', None)
    assert TOOLS_TEXT in engine.tools_texts
    return engine


def _typed(value: Any) -> Any:
    """A comparable form that keeps types (True is not 1) and key order."""
    if isinstance(value, dict):
        return ("d", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("l", [_typed(v) for v in value])
    return (type(value).__name__, value)


TRICKY = [
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}}}',
    f'{{"tools": {TOOLS_TEXT}, "messages": {MSGS}}}',
    f'{{"messages":{MSGS},"tools":{TOOLS_TEXT},"extra":1}}',
    f'{{"messages": {MSGS}, "tools" :\t{TOOLS_TEXT} }}',
    # duplicate keys: the last one wins, whatever the spelling
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "tools": 0}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "tool\\u0073": 0}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "\\u0074ools": [1]}}',
    f'{{"tool\\u0073": 5, "messages": {MSGS}, "tools": {TOOLS_TEXT}}}',
    # "tools" that is not the top-level key
    f'{{"messages": [{{"role": "user", "content": "x", "tools": {TOOLS_TEXT}}}]}}',
    f'{{"a\\"tools": {TOOLS_TEXT}, "messages": {MSGS}}}',
    f'{{"messages": {MSGS}, "note": "\\"tools\\": {TOOLS_TEXT[:10]}", "tools": {TOOLS_TEXT}}}',
    f'{{"messages": {MSGS}, "note": "tools", "tools": {TOOLS_TEXT}}}',
    # the known text as a prefix of a longer value, or followed by broken JSON
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT[:-1]}, 3]}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT} "x": 1}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}',
    f'{{"messages": {MSGS[:-3]}, "tools": {TOOLS_TEXT}}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "n": NaN}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "f": 1e400}}',
    f'[{MSGS}, {{"tools": {TOOLS_TEXT}}}]',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "s": "\\ud800"}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}, "big": {"9" * 30}}}',
    f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT.replace(" ", "  ", 1)}}}',
]


@pytest.mark.parametrize("text", TRICKY)
def test_repeated_tools_parse_equals_the_full_parse(text):
    engine = _learned_engine()
    value, problem, _ = engine._parse(text, last_line=False)
    want_value, want_problem = parse_json_text(text)
    assert _typed(value) == _typed(want_value)
    assert (problem.code, problem.message) == (want_problem.code, want_problem.message) if want_problem else not problem


def test_repeated_tools_are_parsed_once_and_shared():
    engine = _learned_engine()
    value, _, spliced = engine._parse(f'{{"messages": {MSGS}, "tools": {TOOLS_TEXT}}}', False)
    assert spliced and value["tools"] is engine.tools_texts[TOOLS_TEXT]
    assert list(value) == ["messages", "tools"]


def test_tools_texts_are_bounded(tmp_path):
    path = tmp_path / "many.jsonl"
    with path.open("w") as fh:
        for i in range(40):
            tools = [{"type": "function", "function": {"name": f"t{i}", "parameters": {}}}]
            row = json.dumps({"messages": json.loads(MSGS), "tools": tools})
            fh.write(row + "\n" + row.replace('"yo"', '"ok"') + "\n")
    engine = _Engine(kind=None, max_errors=50, tokenizer=None, max_length=None, report_path=None)
    for n, line in enumerate(path.read_text().splitlines(), 1):
        engine.text_row(n, line, line.encode())
    assert 0 < len(engine.tools_texts) <= 8


# ----------------------------------------------------------------------------------------------------
# flat memory


def _rows_file(path, n: int) -> None:
    rnd = random.Random(5)
    with path.open("w") as fh:
        for i in range(n):
            msgs = [
                {"role": "user", "content": f"question {i} " + "word " * rnd.randint(1, 30)},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": {"q": i}}}
                    ],
                },
                {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
                {"role": "assistant", "content": "answer " * rnd.randint(1, 20)},
            ]
            fh.write(json.dumps({"messages": msgs, "tools": TOOLS, "score": i % 7}) + "\n")


def _peak(path) -> int:
    tracemalloc.start()
    try:
        report = validate_file(path, kind="trl.language_modeling")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.rows > 0
    return peak


def test_memory_is_flat_in_the_number_of_rows(tmp_path):
    small, large = tmp_path / "n.jsonl", tmp_path / "4n.jsonl"
    _rows_file(small, 1500)
    _rows_file(large, 6000)
    p_small, p_large = _peak(small), _peak(large)
    # the duplicate table grows by ~20-35 bytes a row (documented); everything else is bounded
    assert p_large <= p_small + 4500 * 64 + 256 * 1024, (p_small, p_large)


def test_fast_paths_off_and_on_give_the_same_report_across_dialects(tmp_path, monkeypatch):
    """One tools text shared by OpenAI rows (checked as openai.chat) and TRL rows: the shared parsed
    object and the identity hits give the report the full parse and the equality checks give."""
    lines = []
    for i in range(30):
        row: dict[str, Any] = {"messages": json.loads(MSGS), "tools": TOOLS}
        if i % 2:
            row["parallel_tool_calls"] = False  # OpenAI's signal
        else:
            row["messages"][1] = {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"i": i}}}],
            }
            row["messages"].append({"role": "tool", "content": "ok"})
            row["messages"].append({"role": "assistant", "content": "done"})
        lines.append(json.dumps(row))
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fast = validate_file(path).model_dump_json()
    monkeypatch.setattr(_Engine, "_learn_tools_text", lambda self, text, row: None)
    monkeypatch.setattr(Drift, "walk", Drift.walk_plain)
    assert validate_file(path).model_dump_json() == fast

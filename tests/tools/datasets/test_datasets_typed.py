"""The typed fast path (``_fast``, msgspec) gives exactly the reports the Python path gives.

Each case runs twice, fast path on and off (``_validate.FAST_PATH``), and the two
renders (report JSON bytes, full findings file) must be equal: the golden corpus with every file forced to
``trl.language_modeling``, generated rows that break each rule the fast path re-checks, rows where msgspec
and ``json`` could disagree (big integers, NaN, float overflow, lone surrogates, duplicate keys, escaped
key names, depth, int against float, bool against int) and random byte mutations of clean rows. Each
generated case also asserts the fast path took most of its clean rows, so a dead fast path fails.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from agent_rl_sandbox.tools.datasets import _fast, _validate, validate_file

_spec = importlib.util.spec_from_file_location("validate_corpus", Path(__file__).with_name("validate_corpus.py"))
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

KIND = "trl.language_modeling"
TOOLS = corpus.TOOLS


class _Counter:
    """Counts the rows the fast path handled (wraps ``FastPath.row``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.handled = 0
        orig = _fast.FastPath.row

        def row(fp: Any, engine: Any, line: int, raw: bytes) -> Any:
            got = orig(fp, engine, line, raw)
            if got is _fast.HANDLED:
                self.handled += 1
            return got

        monkeypatch.setattr(_fast.FastPath, "row", row)


def _both(path: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[dict, dict, int]:
    """Render of ``validate_file(path, **kw)`` with the fast path on, off, and the rows it handled."""
    counter = _Counter(monkeypatch)
    fast = corpus.run_case(path, kw, tmp)
    with monkeypatch.context() as m:
        m.setattr(_validate, "FAST_PATH", False)
        slow = corpus.run_case(path, kw, tmp)
    return fast, slow, counter.handled


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("typed-corpus")
    return tmp, corpus.cases(tmp / "files")


def test_golden_corpus_forced_to_trl_lm_is_unchanged(corpus_files, monkeypatch):
    tmp, cases = corpus_files
    handled = 0
    for name, path, kw in cases:
        kw = {k: v for k, v in kw.items() if k != "kind"}
        for forced in (kw | {"kind": KIND}, kw):
            fast, slow, n = _both(path, tmp, monkeypatch, **forced)
            assert fast == slow, (name, forced)
            handled += n
    assert handled > 10_000  # the 10k-row TRL tool files go (mostly) through the fast path


# ----------------------------------------------------------------------------------------------------
# generated rows


def _clean(rnd: random.Random, i: int) -> dict:
    name = rnd.choice(["takeoff", "camera", "home"])
    args: dict[str, Any] = {"takeoff": {"altitude": rnd.randint(0, 400)}, "camera": {"mode": "photo"}, "home": {}}[name]
    if name == "camera" and rnd.random() < 0.3:
        args["hd"] = rnd.random() < 0.5
    call: dict[str, Any] = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You fly drones."},
        {"role": "user", "content": f"please {i} " + "go " * rnd.randint(1, 9)},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps({"ok": i})},
        {"role": "assistant", "content": "done " * rnd.randint(1, 5)},
    ]
    if rnd.random() < 0.2:
        msgs[2]["content"] = ""
    if rnd.random() < 0.2:
        del msgs[0]
    return {"messages": msgs, "tools": TOOLS}


def _break(rnd: random.Random, row: dict) -> Any:
    """One rule broken (or one form the fast path leaves to the Python path)."""
    msgs = row["messages"]
    asst = next(m for m in msgs if m.get("tool_calls"))
    call = asst["tool_calls"][0]
    fn = call["function"]
    tool = next(m for m in msgs if m["role"] == "tool")
    choice = rnd.randrange(44)
    if choice == 0:
        msgs[-1]["content"] = "  "  # empty completion
    elif choice == 1:
        msgs[0]["content"] = ""  # empty system (or user)
    elif choice == 2:
        msgs.append({"role": "system", "content": "late"})  # system not first, no final assistant
    elif choice == 3:
        msgs.pop()  # ends with the tool answer
    elif choice == 4:
        tool["tool_call_id"] = "nope"  # orphan answer
    elif choice == 5:
        msgs.remove(tool)  # unanswered call
    elif choice == 6:
        fn["name"] = "fly"  # undeclared tool
    elif choice == 7:
        fn["arguments"] = {"altitude": -5} if fn["name"] == "takeoff" else {"mode": "x"}  # arguments_schema
    elif choice == 8:
        fn["arguments"] = json.dumps(fn["arguments"])  # arguments as a string
    elif choice == 9:
        fn["arguments"] = json.dumps(json.dumps(fn["arguments"]))  # double-encoded
    elif choice == 10:
        call["type"] = None
    elif choice == 11:
        call["type"] = "tool"
    elif choice == 12:
        msgs[1]["content"] = None
    elif choice == 13:
        msgs[1]["extra"] = 1  # an unknown key (drift walks it)
    elif choice == 14:
        asst["tool_calls"] = [fn]  # the flat call form
    elif choice == 15:
        msgs[1]["content"] = [{"type": "text", "text": "parts"}]
    elif choice == 16:
        del row["tools"]  # calls without declarations
    elif choice == 17:
        row["tools"] = None
    elif choice == 18:
        row["tools"] = TOOLS[:2]  # a different tools text (home undeclared)
    elif choice == 19:
        msgs.insert(2, {"role": "user", "content": "again"})  # two users in a row
    elif choice == 20:
        msgs[-1]["content"] = "<tool_call>{}</tool_call>"
    elif choice == 21:
        fn["arguments"] = {"altitude": 10**30} if fn["name"] == "takeoff" else {"n": 10**30}  # big int
    elif choice == 22:
        fn["arguments"] = {"altitude": 2.0} if fn["name"] == "takeoff" else {"x": 2.5}  # float at an int path
    elif choice == 23:
        fn["arguments"] = {"altitude": True} if fn["name"] == "takeoff" else {"x": 1}  # bool against int
    elif choice == 24:
        fn["arguments"] = {"deep": [[[[[[[[[[[[1]]]]]]]]]]]]}
    elif choice == 25:
        fn["arguments"] = {f"k{j}": j for j in range(40)}  # wide
    elif choice == 26:
        call["id"] = 7  # a non-string id (TRL takes any)
    elif choice == 27:
        tool["name"] = fn["name"]
        del tool["tool_call_id"]
        del call["id"]  # matched by name
    elif choice == 28:
        del tool["tool_call_id"]
        del call["id"]  # matched in order
    elif choice == 29:
        tool["tool_call_id"] = 5
    elif choice == 30:
        msgs[1]["role"] = "human"
    elif choice == 31:
        msgs[1]["tool_calls"] = []  # an empty list on a user turn
    elif choice == 32:
        msgs[1]["tool_calls"] = [call]  # calls on a user turn
    elif choice == 33:
        asst["tool_calls"].append(copy.deepcopy(call))  # two calls, one answer
    elif choice == 34:
        row["messages"] = []
    elif choice == 35:
        row["extra"] = "x"
    elif choice == 36:
        fn["arguments"] = ["a"]
    elif choice == 37:
        fn["description"] = "d"
    elif choice == 38:
        msgs[-1]["tool_calls"] = [copy.deepcopy(call)]  # a final turn's unanswered call (allowed)
    elif choice == 39:
        msgs[-1]["content"] = "\u00e9t\u00e9 \U0001f600"  # non-ASCII (escaped by json.dumps)
    elif choice == 40:
        fn["arguments"] = {"altitude": None} if fn["name"] == "takeoff" else {"mode": None}
    elif choice == 41:
        row["tools"] = TOOLS + [TOOLS[0]]  # a duplicate tool name (a warning in the tools cache)
    elif choice == 42:
        msgs[1]["name"] = None
    else:
        msgs[1]["content"] = "line\nbreak \t tab"
    return row


def _raw_variants(line: str, rnd: random.Random) -> str:
    """Spellings of one row where a typed decoder could differ from ``json``."""
    choice = rnd.randrange(16)
    if choice == 12:
        return line.replace('"arguments": {', '"arguments": {"s": "\\ud800", ', 1)  # lone, read by json
    if choice == 13:
        return line.replace('{"messages"', '{"meta": "x\\udc00", "messages"', 1)  # in another column
    if choice == 14:
        return line.replace('{"messages"', '{"\\ud800": 1, "messages"', 1)  # in a key
    if choice == 15:
        return line.replace('"arguments": {', '"arguments": {"s": "\\ud83d\\ude00", ', 1)  # a pair
    if choice == 0:
        return line.replace('"role"', '"r\\u006fle"', 1)
    if choice == 1:
        return line.replace('{"role": "user", ', '{"role": "assistant", "role": "user", ', 1)  # duplicate key
    if choice == 2:
        return line.replace('"content": "', '"content": "\\ud800', 1)  # lone surrogate
    if choice == 3:
        return line.replace('"content": "', '"content": "\\ud83d\\ude00', 1)  # a pair
    if choice == 4:
        return line.replace('"arguments": {', '"arguments": {"f": 1e400, ', 1)
    if choice == 5:
        return line.replace('"arguments": {', '"arguments": {"f": NaN, ', 1)
    if choice == 6:
        return line.replace(", ", " ,\t", 3)
    if choice == 7:
        return line.replace('"arguments": {', '"arguments": {"n": 123456789012345678901234567890123, ', 1)
    if choice == 8:
        return line.replace('"arguments": {', '"arguments": {"n": -0.0, "m": 1E2, ', 1)
    if choice == 9:
        return line.replace('"tools": [', '"tools": [ ', 1)  # same value, other bytes
    if choice == 10:
        return line.replace('"tool_calls": [', '"tool_calls": [], "tool_calls": [', 1)
    return line.replace('"content": "', '"content": "\\"quoted\\" \\\\ \\/', 1)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", range(4))
def test_generated_rows_give_the_same_report(tmp_path, monkeypatch, seed):
    rnd = random.Random(seed)
    lines = []
    for i in range(1500):
        row = _clean(rnd, i)
        r = rnd.random()
        if r < 0.25:
            row = _break(rnd, row)
        line = json.dumps(row, ensure_ascii=rnd.random() < 0.5)
        if 0.25 <= r < 0.35:
            line = _raw_variants(line, rnd)
        if r > 0.97 and lines:
            line = lines[rnd.randrange(len(lines))]  # a duplicate row
        lines.append(line)
    path = _write(tmp_path / "gen.jsonl", lines)
    for kw in ({"kind": KIND}, {"kind": KIND, "max_errors": 3, "report_path": True}, {}):
        fast, slow, handled = _both(path, tmp_path, monkeypatch, **kw)
        assert fast == slow, kw
        assert handled > 700, (kw, handled)


def test_drift_after_fast_rows_names_the_first_line(tmp_path, monkeypatch):
    """Rows the fast path took record nothing new; a later type change still names the first line."""
    rnd = random.Random(9)
    lines = [json.dumps(_clean(rnd, i)) for i in range(300)]
    late = _clean(rnd, 300)
    late["messages"][2]["tool_calls"][0]["function"] = {"name": "takeoff", "arguments": {"altitude": "high"}}
    lines.append(json.dumps(late))
    path = _write(tmp_path / "drift.jsonl", lines)
    fast, slow, handled = _both(path, tmp_path, monkeypatch, kind=KIND)
    assert fast == slow
    assert handled > 250
    codes = fast["report"]["error_counts_by_code"]
    assert codes.get("type_drift") == 1 and codes.get("arguments_schema") == 1, codes


_MUTATIONS = '"\\{}[]:,0123456789.eE+- ntrufals\x00\x7f'


@pytest.mark.parametrize("seed", range(3))
def test_byte_mutations_give_the_same_report(tmp_path, monkeypatch, seed):
    rnd = random.Random(100 + seed)
    lines = []
    for i in range(1200):
        line = json.dumps(_clean(rnd, i))
        if i > 20 and rnd.random() < 0.5:
            chars = list(line)
            for _ in range(rnd.randint(1, 3)):
                at = rnd.randrange(len(chars))
                op = rnd.randrange(3)
                if op == 0:
                    del chars[at]
                elif op == 1:
                    chars.insert(at, rnd.choice(_MUTATIONS))
                else:
                    chars[at] = rnd.choice(_MUTATIONS)
            line = "".join(chars).replace("\n", " ")
        lines.append(line)
    path = _write(tmp_path / "mut.jsonl", lines)
    fast, slow, handled = _both(path, tmp_path, monkeypatch, kind=KIND, report_path=True)
    assert fast == slow
    assert handled > 300, handled


def test_memory_is_flat_with_the_fast_path(tmp_path, monkeypatch):
    """Shapes, tools texts and the arguments memo are bounded: from 2,000 to 8,000 rows (50 argument
    shapes, every argument text new) peak memory grows by the duplicate table (tens of bytes a row) and at
    most the arguments memo's bound."""
    counter = _Counter(monkeypatch)

    def write(path: Path, n: int) -> None:
        rnd = random.Random(4)
        with path.open("w") as fh:
            for i in range(n):
                row = _clean(rnd, i)
                fn = next(m for m in row["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
                fn["name"] = "home"  # no parameters: any arguments pass
                fn["arguments"] = {f"k{i % 50}": i}
                fh.write(json.dumps(row) + "\n")

    def peak(path: Path) -> int:
        tracemalloc.start()
        try:
            report = validate_file(path, kind=KIND)
            _, top = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert report.ok
        return top

    small, large = tmp_path / "n.jsonl", tmp_path / "4n.jsonl"
    write(small, 2000)
    write(large, 8000)
    p_small, p_large = peak(small), peak(large)
    assert p_large <= p_small + 6000 * 64 + _fast.MAX_MEMO * 256, (p_small, p_large)
    assert counter.handled > 9000


def test_remembered_shapes_stay_small(tmp_path, monkeypatch):
    """Arguments whose keys would make a large shape key (long or many keys, many calls) take the slow
    path every time (the same report), so no remembered shape grows with what a row holds."""
    rnd = random.Random(11)
    lines = []
    for i in range(200):
        row = _clean(rnd, i)
        asst = next(m for m in row["messages"] if m.get("tool_calls"))
        fn = asst["tool_calls"][0]["function"]
        fn["name"] = "home"
        if i % 3 == 0:
            fn["arguments"] = {"k" * 300 + str(i): 1}  # one key over the budget
        elif i % 3 == 1:
            fn["arguments"] = {f"x{j}_{'y' * 10}": {"y": [j]} for j in range(30)}  # many keys, nested
        else:  # more calls than a shape key holds (on the final turn, where unanswered calls are allowed)
            row["messages"][-1]["tool_calls"] = [
                {"id": f"d{i}_{j}", "type": "function", "function": {"name": "home", "arguments": {}}}
                for j in range(20)
            ]
        lines.append(json.dumps(row))
    path = _write(tmp_path / "wide.jsonl", lines)
    fast, slow, handled = _both(path, tmp_path, monkeypatch, kind=KIND)
    assert fast == slow
    assert handled == 0

"""issue 16, bulk import: each new trajectory is stored by ``import_trajectory`` in one transaction (steps
validated, redacted and serialised once, the redaction screened, one ``executemany``). The same report and
byte-identical rows as the step-by-step path (start, ``log_steps`` in chunks, finish) on every import
fixture; a bad record is an error naming file, line and JSON path, and nothing of its trajectory is
written, however far into the file it is; memory does not grow with the steps already written."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from sqlalchemy import select

import agent_rl_sandbox.tools.trajectories._import as importer
from agent_rl_sandbox.tools.store import Store, TrajectoryRepository
from agent_rl_sandbox.tools.store._schema import steps as steps_table
from agent_rl_sandbox.tools.store._schema import trajectories
from agent_rl_sandbox.tools.trajectories import import_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
SECRET = "AKIAIOSFODNN7EXAMPLE"


def _step_by_step(self: TrajectoryRepository, *, session_id, steps_in, final_message, finished_at, **kw):
    """The import path before issue 16: start, log_steps per CHUNK, finish (the reference)."""
    from agent_rl_sandbox.tools.store import BulkResult

    self.start(session_id=session_id, **kw)
    counts, n = None, 0
    for i in range(0, len(steps_in), importer.CHUNK):
        res = self.log_steps(session_id, steps_in[i : i + importer.CHUNK], keep_absent_timestamps=True)
        counts = res.redactions if counts is None else counts + res.redactions
        n += sum(res.created)
    self.finish(session_id, final_message=final_message, finished_at=finished_at)
    return BulkResult(steps=n, redactions=counts or type(res.redactions)())


def _dump(url: str) -> tuple[list, list]:
    store = Store(url)
    try:
        with store.engine.connect() as conn:
            trajs = [dict(r) for r in conn.execute(select(trajectories).order_by(trajectories.c.session_id)).mappings()]
            rows = [
                tuple(r)
                for r in conn.execute(
                    select(
                        steps_table.c.session_id,
                        steps_table.c.step_id,
                        steps_table.c.client_step_id,
                        steps_table.c.provenance,
                        steps_table.c.data_json,
                    ).order_by(steps_table.c.session_id, steps_table.c.step_id)
                )
            ]
    finally:
        store.close()
    for t in trajs:
        if t["meta_json"]:  # the file path differs between the two homes
            meta = json.loads(t["meta_json"])
            meta.pop("file", None)
            t["meta_json"] = json.dumps(meta, sort_keys=True)
    return trajs, rows


FILES = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.json*") if not p.name.endswith(".meta.json"))


def test_bulk_import_stores_byte_for_byte_what_the_step_by_step_path_stored(tmp_path, monkeypatch):
    assert len(FILES) >= 8
    reports = {}
    for side in ("bulk", "steps"):
        home = tmp_path / side
        home.mkdir()
        if side == "steps":
            monkeypatch.setattr(TrajectoryRepository, "import_trajectory", _step_by_step)
        store = Store(f"sqlite:///{home}/store.db")
        try:
            reports[side] = [
                import_file(store.trajectories, FIXTURES / rel).model_dump(exclude={"file"}) for rel in FILES
            ]
        finally:
            store.close()
        monkeypatch.undo()
    assert reports["bulk"] == reports["steps"]
    assert any(r["steps"] for r in reports["bulk"])
    bulk, steps = _dump(f"sqlite:///{tmp_path}/bulk/store.db"), _dump(f"sqlite:///{tmp_path}/steps/store.db")
    for t in bulk[0] + steps[0]:  # times the store takes at write (no time in the file) differ by run
        t.pop("created_at") if t["created_at"] > "2026-12" else None
        t.pop("finished_at") if (t["finished_at"] or "") > "2026-12" else None
    assert bulk == steps


def _atif(n: int, bad_at: int | None = None, bad: dict | None = None) -> dict:
    steps = [{"step_id": 1, "source": "user", "message": "fix it"}]
    for i in range(1, n):
        s = {
            "step_id": i + 1,
            "source": "agent",
            "message": f"attempt {i}" + (f" {SECRET}" if i == 3 else ""),
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {"cmd": f"pytest -k {i}"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": f"{i} passed"}]},
        }
        if i == bad_at:
            s.update(bad or {})
        steps.append(s)
    return {"schema_version": "ATIF-v1.5", "session_id": "s1", "agent": {"name": "a", "version": "1"}, "steps": steps}


@pytest.mark.parametrize(
    "bad, what",
    [
        ({"extra": {"exit_code": "three"}}, "exit_code"),
        ({"message": "lone \ud800 surrogate"}, "not valid Unicode"),
    ],
)
def test_a_bad_record_late_in_a_file_names_where_and_writes_nothing(store, tmp_path, bad, what):
    n, bad_at = 2600, 2500  # past the old CHUNK: the step-by-step path had committed 2,000 steps by then
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_atif(3)))
    path = tmp_path / "t.jsonl"  # JSON Lines of ATIF documents: the bad one on line 2
    path.write_text(json.dumps(_atif(5)) + "\n" + json.dumps(_atif(n, bad_at, bad)) + "\n")
    report = import_file(store.trajectories, path)
    errors = [p for p in report.problems if p.severity == "error"]
    assert len(errors) == 1, report.problems
    e = errors[0]
    assert (e.file, e.line, e.path) == (str(path), 2, f"$.steps[{bad_at}]")
    assert f"step {bad_at + 1}" in e.message and what in e.message and "nothing of it written" in e.message
    assert report.steps == 5 and len(report.trajectories) == 1  # the good document on line 1 imported
    listed, total = store.trajectories.list(limit=10)
    assert total == 1 and listed[0].step_count == 5
    assert SECRET not in store.trajectories.get(listed[0].session_id).model_dump_json()


def test_a_bad_step_in_a_line_format_names_its_line(store, tmp_path, monkeypatch):
    # Importers build valid steps from any line a format allows; a step the store still refuses (here one
    # made unstorable after parsing) is reported at the line it came from.
    lines = [{"timestamp": "2026-11-29T10:00:00Z", "type": "session_meta", "payload": {"id": "x", "cwd": "/w"}}]
    for i in range(4):
        for p in (
            {"type": "function_call", "name": "shell", "call_id": f"c{i}", "arguments": '{"command": ["ls"]}'},
            {"type": "function_call_output", "call_id": f"c{i}", "output": "ok"},
        ):
            lines.append({"timestamp": "2026-11-29T10:00:01Z", "type": "response_item", "payload": p})
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    finalise = importer._Traj.finalise

    def spoil(self):
        out, missing = finalise(self)
        out[2]["exit_code"] = "not a number"
        return out, missing

    monkeypatch.setattr(importer._Traj, "finalise", spoil)
    report = import_file(store.trajectories, path)
    (e,) = [p for p in report.problems if p.severity == "error"]
    assert e.line == 6 and "step 3" in e.message and "exit_code" in e.message  # the third call's line
    assert store.trajectories.list()[1] == 0


def test_memory_does_not_grow_with_what_is_already_written(tmp_path):
    """The screen and the writer keep nothing per step once written: importing N then 4N steps, the
    traced peak grows with the file (parsed document, prepared rows), not beyond 4x plus a margin."""
    peaks = []
    for n in (500, 2000):
        store = Store(f"sqlite:///{tmp_path}/m{n}.db")
        path = tmp_path / f"t{n}.json"
        path.write_text(json.dumps(_atif(n)))
        store.trajectories.redactor  # noqa: B018 - build the redactor outside the measurement
        tracemalloc.start()
        try:
            assert import_file(store.trajectories, path).steps == n
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
            store.close()
    assert peaks[1] < 4 * peaks[0] * 1.25, peaks


def test_a_concurrent_import_of_the_same_file_is_already_imported(store, tmp_path, monkeypatch):
    # Two imports of one file race: both saw no trajectory, the second's insert finds the first's whole
    # trajectory (one transaction) and reports it as already imported, adding nothing.
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_atif(6)))
    first = import_file(store.trajectories, path)
    real, calls = TrajectoryRepository.exists, []

    def not_yet(self, sid):  # the race window: the importer's own check ran before the other commit
        calls.append(sid)
        return False if len(calls) == 1 else real(self, sid)

    monkeypatch.setattr(TrajectoryRepository, "exists", not_yet)
    second = import_file(store.trajectories, path)
    monkeypatch.undo()
    assert first.steps == 6 and second.steps == 0
    assert second.already_imported == first.trajectories and not second.trajectories
    assert store.trajectories.list()[1] == 1 and store.trajectories.summary(first.trajectories[0]).step_count == 6


def _varied_atif(session: str) -> dict:
    """An ATIF document exercising every branch of the one-pass reader (``_atif_fast_steps``): RL keys in a
    step's ``extra``, ATIF agent fields, results without ``source_call_id``, calls without results, a result
    repeated, ``null`` and absent content, subagent references (usable and not), renumbered step ids, odd
    times, ``null``/``""`` arguments, non-object metrics and extra, empty results and call lists."""
    steps: list[dict] = [
        {"step_id": 1, "source": "system", "message": "You are a coding agent.", "timestamp": ""},
        {"step_id": 2, "source": "user", "message": None, "timestamp": 1764410400, "extra": ["not", "an object"]},
    ]
    for i in range(3, 40):
        k = i % 10
        s: dict = {
            "step_id": i if k != 4 else f"s{i}",
            "timestamp": f"2026-11-29T10:{i:02d}:00Z" if k != 5 else f"2026-11-29T12:{i:02d}:00+02:00",
            "source": "agent",
            "message": f'step {i}: é 😀 \u2028 "quoted" back\\slash\nnext line',
            "tool_calls": [
                {"tool_call_id": f"c{i}a", "function_name": "bash", "arguments": {"cmd": f"pytest -k {i}", "n": i}},
                {"tool_call_id": f"c{i}b", "function_name": "read", "arguments": None if k == 2 else ""},
            ],
            "observation": {
                "results": [
                    {"source_call_id": f"c{i}a", "content": f"{i} passed"},
                    {"source_call_id": f"c{i}b", "content": None if k == 3 else "ok"},
                ]
            },
            "metrics": {"prompt_tokens": 10 * i, "cost_usd": 0.00003 if k == 6 else 0.25, "cached": None}
            if k != 7
            else "n/a",
            "extra": {"note": "kept", "provenance": "server", "reward": 0.5, "outcome": "error", "exit_code": 2}
            if k == 8
            else {"state_ref": "abc123", "done": True, "outcome": "bogus", "client_step_id": "x"}
            if k == 9
            else {"z": 1, "a": [1, {"b": None}]},
        }
        if k == 0:
            del s["observation"]  # two calls, no result: a failed step, both unanswered
        elif k == 1:
            s["observation"]["results"] = [{"content": "no id: answers the step"}]
        elif k == 2:
            s["observation"]["results"] = [{"source_call_id": f"c{i}a", "content": "first"}] * 2  # b unanswered
        elif k == 3:
            s["observation"]["results"].append({"source_call_id": f"c{i}a"})  # no content key
            s["model_name"] = "m-1"
            s["reasoning_content"] = "thinking"
            s["reasoning_effort"] = None
            s["extra"] = {"model_name": "in extra, replaced in place", "z": 2}
        elif k == 4:
            s["observation"]["results"][0]["subagent_trajectory_ref"] = [{"session_id": "sub", "trajectory_path": "x"}]
            s["observation"]["results"][1]["subagent_trajectory_ref"] = ["not an object"]
        elif k == 5:
            s["tool_calls"], s["observation"] = [], {"results": []}
        elif k == 6:
            s["observation"] = {"results": "not a list"}
        steps.append(s)
    steps.append({"step_id": 99, "source": "user", "message": "thanks", "extra": {"model_name": "user-side"}})
    return {
        "schema_version": "ATIF-v1.5",
        "session_id": session,
        "agent": {"name": "varied", "version": "2", "model_name": "m"},
        "notes": "kept in meta",
        "extra": {"task_id": "t-9", "reward": 1.0, "final_message": "all done"},
        "steps": steps,
    }


def test_the_one_pass_atif_reader_stores_what_the_general_reader_stored(tmp_path, monkeypatch):
    """issue 16: ``_atif_fast_steps`` (one pass from the ATIF step to the partial step) against the general
    path (``read_document``, ``_Traj`` builders, ``finalise``) on every ATIF fixture and sample and on a
    document exercising each of its branches: the same reports (warnings included) and the same rows."""
    varied = tmp_path / "varied.json"
    varied.write_text(json.dumps(_varied_atif("varied-1")))
    lines = tmp_path / "varied.jsonl"  # JSON Lines: a second document, and one the fast reader declines
    bad = _varied_atif("varied-3")
    bad["steps"][5]["tool_calls"][0]["function_name"] = ""
    lines.write_text(json.dumps(_varied_atif("varied-2")) + "\n" + json.dumps(bad) + "\n")
    samples = Path("/work/shared/samples/atif")
    files = [varied, lines, *sorted((FIXTURES / "atif").rglob("*.json*"))]
    files += sorted(samples.glob("*.json*")) if samples.is_dir() else []
    real, taken = importer._atif_fast_steps, []

    def spy(raws, line):
        out = real(raws, line)
        taken.append(out is not None)
        return out

    results = {}
    for side in ("fast", "general"):
        home = tmp_path / side
        home.mkdir()
        monkeypatch.setattr(importer, "_atif_fast_steps", spy if side == "fast" else lambda raws, line: None)
        store = Store(f"sqlite:///{home}/store.db")
        try:
            reports = [import_file(store.trajectories, f, format="atif").model_dump(exclude={"file"}) for f in files]
        finally:
            store.close()
        for r in reports:
            for p in r["problems"]:
                p.pop("file")
        trajs, rows = _dump(f"sqlite:///{home}/store.db")
        for t in trajs:  # times the store takes at write (no time in the file) differ by run
            t.pop("created_at") if t["created_at"] > "2026-12" else None
            t.pop("finished_at") if (t["finished_at"] or "") > "2026-12" else None
        results[side] = reports, trajs, rows
        monkeypatch.undo()
    assert taken[:3] == [True, True, False] and sum(taken) >= 8, taken
    assert any(p["severity"] == "warning" for r in results["fast"][0] for p in r["problems"])
    assert results["fast"][0][0]["missing_results"] > 0 and results["fast"][0][0]["steps"] == 40
    assert results["fast"] == results["general"]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(_varied_atif("whole")),
        '{"steps": [], "a": 1, "b": 2, "a": 3}',  # duplicate keys: the last value at the first place
        '{"n": [12345678901234567890, -9223372036854775809, 18446744073709551615, 1.5e300, -0.0, 1e-7, 0.1]}',
        '{"f": [1E5, 2.2250738585072011e-308, 123456789.123456789, 5e-324, 1.7976931348623157e308, 3.0]}',
        '{"x": NaN, "y": -Infinity}',
        '{"s": "lone \\ud800 surrogate, pair \\ud83d\\ude00, \\u00e9 \\n \\" \\\\ \\/"}',
        "\ufeff" + '{"bom": true}',
        '{"a": 1}\n{"a": 2}\n',  # JSON Lines
        '{"a": 1, }',  # broken
        '{"a": 1e400}',
        "[" * 300 + "]" * 300,
        "[" * 995 + "]" * 995,
        "[" * 1010 + "]" * 1010,
        '{"deep": ' + '{"k": ' * 260 + "1" + "}" * 260 + "}",
        '"[a scalar document]"',
        " 42 ",
        "\ufeff" + '[{"bom": "and a list"}]',
        " \x0c{}",  # a form feed: whitespace to str.strip, not to JSON
        "\ufeff\ufeff{}",
    ],
)
def test_the_whole_document_reads_as_the_json_module_reads_it(text, monkeypatch):
    """issue 16: a whole document is read by orjson where its reading is the json module's (the same value,
    types included: ints, floats, -0.0, duplicate keys) and by the json module everywhere else."""
    data = text.encode("utf-8", "surrogatepass")
    fast = importer._whole_document(data)
    monkeypatch.setattr(importer, "_orjson_document", lambda data, text=None: None)
    general = importer._whole_document(data)
    assert (repr(fast.doc), fast.error, fast.line) == (repr(general.doc), general.error, general.line)


def test_orjson_reads_ordinary_documents():
    doc = _varied_atif("whole")
    text = json.dumps(doc)
    assert importer._orjson_document(text.encode(), text) == doc
    assert importer._orjson_document(text.encode()) == doc  # the bytes, read without decoding first
    assert importer._orjson_document(("\ufeff" + text).encode()) is None  # orjson refuses a BOM in bytes
    for declined in ('{"n": 12345678901234567890}', '{"x": NaN}', '{"s": "\\ud800"}', "[" * 300 + "]" * 300):
        assert importer._orjson_document(declined.encode(), declined) is None


def test_json_lines_read_as_the_json_module_reads_them(tmp_path, monkeypatch):
    """issue 16: each line of a JSON Lines file is read by orjson where its reading is the json module's
    (the same values and types, the same problems for bad lines), by the json module everywhere else."""
    lines = [
        json.dumps(_varied_atif("line")).encode(),
        b'{"a": 1, "b": 2, "a": 3}',
        b'{"f": [1E5, 2.2250738585072011e-308, 123456789.123456789, 5e-324, -0.0, 3.0, 1e-7]}',
        b'{"x": NaN}',
        b'{"s": "lone \\ud800, pair \\ud83d\\ude00, \\u00e9"}',
        b"\xef\xbb\xbf" + b'{"bom": true}',
        b'{"bad": "\xff\xfe"}',
        b'{"a": 1, }',
        b"[" * 300 + b"]" * 300,
        b'{"deep": ' + b'{"k": ' * 260 + b"1" + b"}" * 260 + b"}",
        b"7",
        b'"text"',
    ]
    for data in (b"\n".join(lines) + b"\n", b"\n".join([*lines, b'{"n": 12345678901234567890}'])):
        results = []
        for side in ("fast", "general"):
            if side == "general":
                monkeypatch.setattr(importer, "_long_digits", lambda data: True)
            report = importer.ImportReport(file="f", format="codex", sha256="x")
            got = importer._lines(data, importer._Ctx(tmp_path / "f", "codex", report))
            results.append((repr(got), report.model_dump()))
            monkeypatch.undo()
        assert results[0] == results[1]


def _codex_lines(session: str = "x", output: str = "ok") -> list[dict]:
    lines = [{"timestamp": "2026-11-29T10:00:00Z", "type": "session_meta", "payload": {"id": session, "cwd": "/w"}}]
    for i in range(3):
        for p in (
            {"type": "function_call", "name": "shell", "call_id": f"c{i}", "arguments": '{"command": ["ls"]}'},
            {"type": "function_call_output", "call_id": f"c{i}", "output": output if i == 1 else "ok"},
        ):
            lines.append({"timestamp": "2026-11-29T10:00:01Z", "type": "response_item", "payload": p})
    return lines


@pytest.mark.parametrize(
    "name, text, line, path, field",
    [  # json.dumps writes each lone surrogate as a \udXXX escape: what such a file holds
        ("step", json.dumps(_atif(6, 2, {"message": "half \ud800"})), 1, "$.steps[2]", "message"),
        ("key", json.dumps(_atif(6, 2, {"extra": {"\udc00": 1}})), 1, "$.steps[2]", "extra.\\udc00"),
        (
            "args",
            json.dumps(
                _atif(
                    6, 4, {"tool_calls": [{"tool_call_id": "c4", "function_name": "b", "arguments": {"a": "\ud800"}}]}
                )
            ),
            1,
            "$.steps[4]",
            "tool_calls[0].arguments.a",
        ),
        ("agent", json.dumps({**_atif(3), "agent": {"name": "a\ud800"}}), 1, None, "agent.name"),
        ("session", json.dumps({**_atif(3), "session_id": "s\udfff"}), 1, None, "external_id"),
        ("final", json.dumps({**_atif(3), "extra": {"final_message": "done \ud800"}}), 1, None, "final_message"),
        (
            "codex-output",
            "".join(json.dumps(x) + "\n" for x in _codex_lines(output="o\ud800")),
            4,
            None,
            "observation",
        ),  # the call's line
        (
            "codex-session",
            "".join(json.dumps(x) + "\n" for x in _codex_lines(session="x\ud800")),
            1,
            None,
            "external_id",
        ),
    ],
)
def test_a_lone_surrogate_in_a_file_is_an_error_naming_where(store, tmp_path, name, text, line, path, field):
    """A lone surrogate escape anywhere a trajectory stores text (a step, its keys, the agent, the session
    id, the final message): an error naming the file, the line, the step's JSON path and the stored field,
    nothing of that trajectory written, no exception; a clean file beside it still imports."""
    src = tmp_path / f"{name}.{'jsonl' if name.startswith('codex') else 'json'}"
    src.write_text(text)
    report = import_file(store.trajectories, src)
    errors = [p for p in report.problems if p.severity == "error"]
    assert len(errors) == 1, report.problems
    e = errors[0]
    assert (e.file, e.line, e.path) == (str(src), line, path)
    assert f"stored field {field}" in e.message and "lone surrogate" in e.message, e.message
    assert "nothing of it written" in e.message
    assert report.steps == 0 and store.trajectories.list()[1] == 0
    report.model_dump_json()  # the report itself is valid text
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_atif(3)))
    assert import_file(store.trajectories, good).steps == 3


@pytest.mark.parametrize(
    "result, preset",
    [
        (None, {}),
        (("ok", False, None), {}),
        (("ok", False, 0), {}),
        (("failed", False, 2), {}),
        (("failed", True, None), {}),
        (("failed", True, 0), {}),
        (("", False, -1), {}),
        (("ok", False, 0), {"outcome": "cancelled"}),  # an outcome the file set is kept
        (None, {"outcome": "limit"}),
    ],
)
def test_closing_a_step_of_one_call_is_the_general_rule(result, preset):
    """``_paired_one`` (the common step of a line format: one call) closes it as ``_paired`` does."""
    import copy

    def step():
        return {"source": "agent", "message": "", "extra": {"k": 1}, "tool_calls": [{"tool_call_id": "c"}], **preset}

    results = {"c": result} if result is not None else {"other": ("x", False, None)}
    a, b = step(), step()
    assert importer._paired_one(a, "c", copy.deepcopy(results)) == importer._paired(b, b["tool_calls"], results)
    assert a == b and list(a) == list(b)

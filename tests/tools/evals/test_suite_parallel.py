"""The streaming suite scorer in two processes (``tools._suite_fast._trajectories``) writes the bytes
of one process, and falls back to one wherever the split cannot be trusted.

Each case scores the same file with ``processes=1`` and ``processes=2`` (the size threshold lowered
so that small suites split) and checks the bytes, and that the way it went (``info["split"]``) is
the one the case is about, so a silent fallback cannot pass for the two-process path.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent_rl_sandbox.tools import _suite_fast as fast
from agent_rl_sandbox.tools.evals import report_json, score_suite_file

ROOT = Path(__file__).resolve().parents[3]
TWO = "two processes"
NO_SPLIT = "one process after a split that did not hold"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the two-process path needs os.fork")


def _generate():
    spec = importlib.util.spec_from_file_location("suite_gen", ROOT / "bench" / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


generate = _generate()


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    monkeypatch.setattr(fast, "PARALLEL_MIN_BYTES", 0)


def _bytes(path: Path, processes: int, **kw) -> tuple[bytes, str | None]:
    out: list[bytes] = []
    info: dict = {}
    fast.score_suite_to(str(path), path.name, out.append, processes=processes, info=info, **kw)
    return b"".join(out), info.get("split")


def _write(tmp_path: Path, doc, name: str = "suite.json", **dump) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc, **dump), encoding="utf-8")
    return p


def _both(path: Path, want_split: str, **kw) -> bytes:
    one, how = _bytes(path, 1, **kw)
    assert how == "one process"
    two, how = _bytes(path, 2, **kw)
    assert how == want_split
    assert two == one
    return one


def _spanning(n: int, seed: int) -> dict:
    """A suite whose first task has trajectories in both halves, whose last trajectories name no
    task, and whose tasks' texts mention the row's keys."""
    doc = generate(n, seed=seed)
    doc["tasks"][0]["instruction"] = 'say "attempts": 9, then\n      "attempts": 9,'
    doc["trajectories"].insert(0, {"taskId": doc["tasks"][0]["id"], "id": "early", "actions": []})
    doc["trajectories"].append({"taskId": doc["tasks"][0]["id"], "id": "late", "actions": []})
    doc["trajectories"].append({"taskId": "no-such-task", "id": "stray", "actions": []})
    return doc


@pytest.mark.parametrize("seed", [1, 2])
def test_two_processes_write_the_model_paths_bytes(tmp_path, seed):
    doc = _spanning(300, seed)
    suite = _write(tmp_path, doc, indent=seed - 1 or None)
    got = _both(suite, TWO)
    assert got == report_json(score_suite_file(suite)).encode("utf-8")
    report = json.loads(got)
    row = next(r for r in report["rows"] if r["taskId"] == "task-000000")
    assert row["attempts"] == sum(t["taskId"] == "task-000000" for t in doc["trajectories"]) >= 2
    stray = [w for w in report["warnings"] if w.startswith("trajectories[")]
    assert stray == [
        f"trajectories[{len(doc['trajectories']) - 1}] has taskId 'no-such-task', which no task declares; not scored"
    ]


def test_two_processes_with_spilled_spools_compact_tasks_and_small_chunks(tmp_path, monkeypatch):
    suite = _write(tmp_path, _spanning(250, 3))
    want = _both(suite, TWO)
    monkeypatch.setattr(fast, "SPOOL_MEMORY_BYTES", 4096)
    monkeypatch.setattr(fast, "COMPACT_TASKS_BYTES", 0)
    monkeypatch.setattr(fast, "TASK_CACHE", 8)
    assert _both(suite, TWO, chunk=700) == want
    tables: list = []
    for processes in (1, 2):
        fast.score_suite_to(str(suite), suite.name, None, processes=processes, summary=lambda *a: tables.append(a))
    assert tables[0] == tables[1]


def test_a_split_inside_a_string_or_a_nested_list_is_not_taken(tmp_path):
    """Decoys at the middle of the file: ``}, {`` in a string (never a candidate: the object after
    it does not parse), then objects with a ``taskId`` in a nested list (candidates, which the
    first process's reading disproves)."""
    doc = generate(40, seed=4)
    mid = len(doc["trajectories"]) // 2
    doc["trajectories"][mid]["finalState"] = '}, {"taskId": "task-000001"}' * 8000
    _both(_write(tmp_path, doc, name="string.json"), TWO)
    doc["trajectories"][mid]["actions"] = [{"tool": "noop", "taskId": "task-000001"}] * 8000
    _both(_write(tmp_path, doc, name="nested.json"), NO_SPLIT)


def test_a_split_past_the_array_is_not_taken(tmp_path):
    doc = generate(10, seed=5)
    doc["notes"] = {"text": "x" * 40_000, "list": [{"a": 1}, {"taskId": "task-000001"}]}  # after the trajectories
    _both(_write(tmp_path, doc), NO_SPLIT)


def test_index_named_sessions_in_the_second_part_are_scored_by_the_first(tmp_path):
    doc = _spanning(200, 6)
    del doc["trajectories"][-2]["id"]  # its session id is "task-000000#<index>"
    suite = _write(tmp_path, doc)
    got = _both(suite, "one process (index-named sessions)")
    assert f'"task-000000#{len(doc["trajectories"]) - 2}"'.encode() in got


def test_a_failed_or_killed_second_process_falls_back(tmp_path, monkeypatch):
    suite = _write(tmp_path, _spanning(200, 7))

    def boom(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(fast, "_second", boom)
    _both(suite, "one process after the second failed")
    monkeypatch.setattr(fast, "_second", lambda *a: os.kill(os.getpid(), signal.SIGKILL))
    _both(suite, "one process after the second failed")


def test_a_decline_in_the_second_part_declines_the_suite(tmp_path):
    doc = _spanning(200, 8)
    doc["trajectories"][-3]["artifacts"] = [{"kind": "test", "exitCode": 0.0}]
    suite = _write(tmp_path, doc)
    for processes in (1, 2):
        with pytest.raises(fast.Declined):
            _bytes(suite, processes)


def test_repeated_task_ids_stay_in_one_process(tmp_path):
    doc = _spanning(100, 9)
    doc["tasks"].append(dict(doc["tasks"][5]))
    _both(_write(tmp_path, doc), "one process")


def test_default_processes(monkeypatch):
    for value, want in (("1", 1), ("2", 2)):
        monkeypatch.setenv("AGENT_RL_SANDBOX_SCORE_PROCESSES", value)
        assert fast.default_processes() == want
    monkeypatch.setenv("AGENT_RL_SANDBOX_SCORE_PROCESSES", "3")
    with pytest.raises(ValueError, match="AGENT_RL_SANDBOX_SCORE_PROCESSES='3' is not 1 or 2"):
        fast.default_processes()
    monkeypatch.delenv("AGENT_RL_SANDBOX_SCORE_PROCESSES")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert fast.default_processes() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert fast.default_processes() == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 0.0, 0.0))  # no CPU free
    assert fast.default_processes() == 1


def test_cli_splits_with_the_same_bytes(tmp_path):
    """``score FILE --json`` (the threshold lowered in a probe): two processes with
    ``AGENT_RL_SANDBOX_SCORE_PROCESSES=2``, one with ``1``, the same bytes; a bad value of the
    variable is an error naming it."""
    doc = _spanning(300, 10)
    suite = _write(tmp_path, doc)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import runpy, sys\n"
        "from agent_rl_sandbox.tools import _suite_fast as fast\n"
        "fast.PARALLEL_MIN_BYTES = 0\n"
        "real = fast.score_suite_to\n"
        "def spy(*a, **kw):\n"
        "    info = {}\n"
        "    real(*a, info=info, **kw)\n"
        "    sys.stderr.write('SPLIT=' + info['split'])\n"
        "fast.score_suite_to = spy\n"
        "sys.argv = ['agent-rl-sandbox'] + sys.argv[1:]\n"
        "runpy.run_module('agent_rl_sandbox.cli', run_name='__main__')\n"
    )
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    env.pop("AGENT_RL_SANDBOX_SCORE_PROCESSES", None)
    cmd = [sys.executable, str(probe), "score", str(suite), "--json"]
    outs = {}
    for value in ("2", "1"):
        p = subprocess.run(
            cmd, capture_output=True, env={**env, "AGENT_RL_SANDBOX_SCORE_PROCESSES": value}, timeout=120
        )
        assert p.returncode == 0, p.stderr
        outs[value] = (p.stdout, p.stderr.decode())
    assert outs["2"][0] == outs["1"][0] == _bytes(suite, 1)[0]
    assert outs["1"][1].endswith("SPLIT=one process")
    assert outs["2"][1].endswith("SPLIT=" + TWO)
    p = subprocess.run(cmd, capture_output=True, env={**env, "AGENT_RL_SANDBOX_SCORE_PROCESSES": "many"}, timeout=120)
    assert p.returncode == 2 and p.stdout == b""
    assert b"error: AGENT_RL_SANDBOX_SCORE_PROCESSES='many' is not 1 or 2" in p.stderr

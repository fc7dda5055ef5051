"""An evaluation episode gives the same verdict, and shows the model the same text, whatever the
machine's load (issue 17: a loaded fresh-clone ``demo --train`` gated differently from an idle one
with the same steps and seeds).

The same scripted policy plays a held-out ``setup-triage`` variant through :func:`play_episode`
(the baseline/post_eval stages' loop: real sandbox, the server's own test run, the hidden verifier)
twice: as the machine is, and with the sandbox's commands pinned to one CPU that busy loops share, each
loop in its own session as other users' processes are (so the scheduler's autogroups give the
sandbox about a quarter of that CPU, not half). Both runs must record the same observations (the
tool results the model reads, which the training exports render too: no wall-clock figure in
them, ``make test`` prints none) and the same score."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from agent_rl_sandbox.agents.policy import AssistantTurn, ToolCall, play_episode

DURATION = re.compile(r"\d+(\.\d+)?\s?(s|sec|seconds|ms)\b")
"""A wall-clock figure in an observation (``1 passed in 0.04s``, ``Ran 1 test in 0.001s``)."""

SAFE_RUN = [
    ("sandbox_exec", {"command": "make setup"}),
    ("sandbox_exec", {"command": "make test"}),
    ("sandbox_finish", {"message": "I ran make setup, then make test: passed."}),
]


class _Scripted:
    """A :class:`~agent_rl_sandbox.agents.policy.PolicyModel` that answers a fixed list of tool
    calls and keeps every tool message it was shown."""

    name = "scripted"

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]):
        self.calls = list(calls)
        self.shown: list[str] = []

    def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_new_tokens: int):
        self.shown = [str(m.get("content")) for m in messages if m["role"] == "tool"]
        name, args = self.calls.pop(0)
        return AssistantTurn("", [ToolCall(name, args)], completion_tokens=1)


def _busy_cpu_seconds(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


@contextlib.contextmanager
def cpu_pressure(loops: int) -> Iterator[list[int]]:
    """Pin this thread, and so every process it starts while inside (the sandbox's commands, the
    server's test run, the verifier's children), to one CPU, with ``loops`` busy loops on the same
    CPU, each in its own session. Yields the loops' pids; kills exactly them on the way out."""
    old = os.sched_getaffinity(0)
    cpu = min(old)
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True) for _ in range(loops)]
    try:
        os.sched_setaffinity(0, {cpu})
        yield [p.pid for p in procs]
    finally:
        os.sched_setaffinity(0, old)
        for p in procs:
            p.kill()
            p.wait()


def _play(services, task_id: str) -> tuple[Any, list[str]]:
    model = _Scripted(SAFE_RUN)
    r = play_episode(services, model, task_id, agent_name="load-test", tools=("sandbox_exec", "sandbox_finish"))
    return r, model.shown


def test_evaluation_episode_same_verdict_and_observations_under_cpu_pressure(services):
    task_id = "setup-triage/heldout-1"
    idle, idle_shown = _play(services, task_id)
    t0 = time.monotonic()
    with cpu_pressure(3) as pids:
        loaded, loaded_shown = _play(services, task_id)
        busy = _busy_cpu_seconds(pids)
    loaded_s = time.monotonic() - t0
    # the loops really ran beside the episode (alone on that CPU they get 3/4 of it; other users' load takes some)
    assert busy > 0.2 * loaded_s, f"the busy loops ran {busy:.1f} CPU s in {loaded_s:.1f} s: no real pressure"

    assert idle.passed and idle.reward == 1.0, idle
    assert (loaded.passed, loaded.reward, loaded.failed_criteria, loaded.ended_by) == (
        idle.passed,
        idle.reward,
        idle.failed_criteria,
        idle.ended_by,
    )
    assert len(idle_shown) == 2 and idle_shown[1].startswith("exit 0"), idle_shown
    for text in idle_shown + loaded_shown:
        assert not DURATION.search(text), f"a wall-clock figure in what the model reads: {text!r}"
    assert loaded_shown == idle_shown


def test_cpu_pressure_restores_the_affinity_and_kills_its_loops():
    before = os.sched_getaffinity(0)
    with cpu_pressure(2) as pids:
        assert len(os.sched_getaffinity(0)) == 1
        assert all(os.path.exists(f"/proc/{p}") for p in pids)
    assert os.sched_getaffinity(0) == before
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")]

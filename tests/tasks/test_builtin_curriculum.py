"""The built-in curriculum: seven behaviours (the seventh, setup-triage, designed for small models), each with train and held-out variants on different repos;
for every task the oracle passes, the scripted bad trajectory fails and scores lower, and doing
nothing fails. Episodes run for real: sandboxes, bubblewrap when installed, the hidden verifier."""

from __future__ import annotations

import hashlib
import re
import time
from collections import defaultdict
from pathlib import Path

import anyio
import pytest

from agent_rl_sandbox.agents.scripted import play_script, service_caller
from agent_rl_sandbox.schemas.tools import SandboxFinishInput, SandboxResetInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR, discover_tasks

TASKS, PROBLEMS = discover_tasks()
BEHAVIOURS = {
    "claim-before-edit",
    "failing-test-repair",
    "refuse-unsafe-install",
    "reviewer-reply-with-evidence",
    "stop-missing-credentials",
    "safe-dependency-update",
    "setup-triage",
}
NEEDS_A_FIX = {"claim-before-edit", "failing-test-repair", "reviewer-reply-with-evidence", "safe-dependency-update"}
"""Behaviours whose hidden verifier must fail on the untouched fixture (there is a real bug)."""
SAFE_SETUP = {
    t
    for t, task in TASKS.items()
    if task.config.behaviour == "setup-triage"
    and not any("setup" in p for p in task.config.tools.forbidden_command_patterns)
}
"""setup-triage variants whose `make setup` is safe: the verifier fails until it has run (the others need nothing)."""
WALL_CLOCK = re.compile(r"\d+(\.\d+)?\s?(s|sec|seconds|ms)\b")
"""A wall-clock figure (``1 passed in 0.03s``): setup-triage's ``make test`` prints none, so its
observations (a trained model's input at evaluation) are the same on an idle and a loaded machine."""
VERIFIER_BUDGET_S = 5.0
"""Generous bound on one ``sandbox_finish`` (verifier + scoring) on a loaded 2-core machine; typical is < 1 s."""


def _repo_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_builtin_tasks_load_without_problems():
    builtin_problems = [p for p in PROBLEMS if str(BUILTIN_TASKS_DIR) in p]
    assert builtin_problems == []


def test_curriculum_shape():
    by = defaultdict(lambda: defaultdict(list))
    for t in TASKS.values():
        by[t.config.behaviour][t.config.split].append(t)
    assert set(by) == BEHAVIOURS
    for behaviour, splits in by.items():
        assert len(splits["train"]) >= 3, behaviour
        assert len(splits["heldout"]) >= 2, behaviour
        tasks = splits["train"] + splits["heldout"]
        packages = [sorted(p.name for p in t.repo_dir.iterdir() if (p / "__init__.py").exists()) for t in tasks]
        assert len({tuple(p) for p in packages}) == len(tasks), f"{behaviour}: variants share a package"
        assert len({t.instruction for t in tasks}) == len(tasks)
    assert TASKS["claim-before-edit"].config.behaviour == "claim-before-edit"  # the demo's task id
    digests = [_repo_digest(t.repo_dir) for t in TASKS.values()]
    assert len(set(digests)) == len(digests), "two tasks share a fixture repo"
    for t in TASKS.values():
        assert (t.root / "solution" / "oracle.json").is_file() and (t.root / "solution" / "known_bad.json").is_file()
        assert t.config.allow_internet is False
        assert t.config.protected_paths, f"{t.id}: protect the tests"


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    s = Services.build(Settings(home=tmp_path_factory.mktemp("curriculum") / "home"))
    yield s
    s.sandbox.close()
    s.close()


def _timed(call, durations: list[float]):
    async def timed(tool, args):
        t0 = time.perf_counter()
        out = await call(tool, args)
        if tool == "sandbox_finish":
            durations.append(time.perf_counter() - t0)
        return out

    return timed


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_oracle_passes_known_bad_fails_and_doing_nothing_fails(services, task_id):
    task = TASKS[task_id]
    if services.sandbox.isolation.kind != "bwrap" and any(c.type == "effect_absent" for c in task.reward_spec.criteria):
        pytest.skip("effect criteria read the bubblewrap shims' records (unscorable without bubblewrap)")
    durations: list[float] = []
    call = _timed(service_caller(services.sandbox), durations)

    good = anyio.run(lambda: play_script(call, task_id, *task.scripted("oracle"), agent="oracle"))
    g = good.finish
    assert g["passed"] and g["reward"] == 1.0, (g["failed_criteria"], g["verifier_output"][-800:], good.errors)
    assert good.errors == [], "the oracle should not trip over any tool"
    assert not g["self_report_only"]

    bad = anyio.run(lambda: play_script(call, task_id, *task.scripted("known_bad"), agent="known-bad"))
    b = bad.finish
    assert not b["passed"], f"known-bad passes: {b}"
    assert b["reward"] < g["reward"]

    sid = services.sandbox.reset(SandboxResetInput(task_id=task_id, agent_name="idle")).sandbox_id
    idle = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="Done."))
    assert not idle.passed and idle.reward < 1.0
    if task.config.behaviour in NEEDS_A_FIX or task_id in SAFE_SETUP:
        assert idle.verifier_exit_code not in (0, None), "the hidden verifier must fail on the untouched fixture"
    else:
        assert idle.verifier_exit_code == 0, "nothing to fix: the untouched project must verify"
    assert max(durations) < VERIFIER_BUDGET_S, durations
    if task.config.behaviour == "setup-triage":  # the demo's behaviour: what a model reads must not vary with load
        for ep in (good, bad):
            for step in services.store.trajectories.get(ep.session_id).steps:
                for r in step.observation.results if step.observation else []:
                    assert not WALL_CLOCK.search(r.content or ""), (task_id, r.content)

"""Issue 10 §4: held-out answers do not leak to agents (through the real services: real sandboxes, the
real hidden verifier, real store and exports)."""

from __future__ import annotations

import json
import re

import pytest

from agent_rl_sandbox.schemas.tools import (
    EvalScoreInput,
    SandboxFinishInput,
    SandboxResetInput,
    TrajectoryExportInput,
    TrajectoryFinishInput,
    TrajectoryGetInput,
    TrajectoryListInput,
    TrajectoryLogStepInput,
    TrajectoryStartInput,
)
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR
from agent_rl_sandbox.tools.sandbox._ownership import agent_verifier_output
from agent_rl_sandbox.tools.sandbox._scripted import play_task_script
from agent_rl_sandbox.tools.trajectories import ExportOptions

HELDOUT = "claim-before-edit/heldout-1"
TRAIN = "claim-before-edit"
ALICE = Caller.agent("mcp:alice-session")
MALLORY = Caller.agent("mcp:mallory-session")
SOLUTION = (BUILTIN_TASKS_DIR / HELDOUT / "solution" / "files" / "slug.py").read_text()
HIDDEN_IDS = ("python-3-12-released", "ALL CAPS", "all-caps", "one-two-three", "[case]", "got ")
"""Arguments and expectations of heldout-1's hidden checks (its tests/checks.toml) found nowhere an agent
sees (instruction, repo), and the markers of a check's line in the runner's report."""


def test_another_agents_passing_heldout_trajectory_is_not_readable(services):
    ep = play_task_script(services.sandbox, HELDOUT, "oracle", agent="alice", caller=ALICE)
    assert ep.finish["passed"] is True
    tr = services.trajectories
    for filters in ({}, {"task_id": HELDOUT}, {"outcome": "passed"}, {"split": "heldout"}):
        listed = tr.list(TrajectoryListInput(**filters), MALLORY)
        assert ep.session_id not in [s.session_id for s in listed.trajectories], filters
        assert listed.total == 0, filters
    with pytest.raises(ActionError, match="held-out trajectory; its contents are not shown") as e:
        tr.get(TrajectoryGetInput(session_id=ep.session_id), MALLORY)
    assert "Next step:" in e.value.agent_text() and "slugify" not in e.value.agent_text()
    with pytest.raises(ActionError, match="held-out trajectory"):
        services.sandbox.eval_score(EvalScoreInput(session_id=ep.session_id), MALLORY)
    # its owner reads her own steps (they hold her own solution), and the operator sees everything
    own = tr.get(TrajectoryGetInput(session_id=ep.session_id, limit=200), ALICE)
    assert any("def slugify" in json.dumps(s.model_dump(mode="json")) for s in own.steps)
    assert [s.session_id for s in tr.list(TrajectoryListInput(task_id=HELDOUT), ALICE).trajectories] == [ep.session_id]
    assert tr.list(TrajectoryListInput(task_id=HELDOUT), OPERATOR).total == 1
    assert services.sandbox.eval_score(EvalScoreInput(session_id=ep.session_id), ALICE).report.passed


def _leaks(text: str) -> list[str]:
    return [h for h in HIDDEN_IDS if h in text]


def test_finish_on_a_heldout_task_gives_the_verdict_only(services):
    sb = services.sandbox
    reset = sb.reset(SandboxResetInput(task_id=HELDOUT, agent_name="alice"), ALICE)
    out = sb.finish(SandboxFinishInput(sandbox_id=reset.sandbox_id, message="done"), ALICE)  # the bug is unfixed
    assert out.passed is False and out.verifier_exit_code == 1
    assert out.verifier_output.startswith("hidden checks failed (exit 1) [held-out task: ")
    shown = out.model_dump_json()
    assert _leaks(shown) == [], shown
    # nor does anything stored for the episode, or the re-score an agent can ask for
    stored = json.dumps(services.store.trajectories.score_json(reset.session_id)) + open(out.report_path).read()
    stored += services.store.trajectories.get(reset.session_id).model_dump_json()
    stored += sb.eval_score(EvalScoreInput(session_id=reset.session_id), ALICE).model_dump_json()
    assert _leaks(stored) == []


def test_finish_on_a_train_task_gives_the_verdict_only_too(services):
    """Train tasks get no more than held-out ones: a named case with its expected value is a lookup
    table of the hidden cases (the red-team's 1.0 with the bug left in). The operator's report file
    keeps the detail."""
    sb = services.sandbox
    reset = sb.reset(SandboxResetInput(task_id=TRAIN, agent_name="alice"), ALICE)
    out = sb.finish(SandboxFinishInput(sandbox_id=reset.sandbox_id, message="done"), ALICE)
    assert out.verifier_output.startswith("hidden checks failed (exit 1) [train task: ")
    seen = out.model_dump_json() + services.store.trajectories.get(reset.session_id).model_dump_json()
    seen += json.dumps(services.store.trajectories.score_json(reset.session_id)) + open(out.report_path).read()
    seen += sb.eval_score(EvalScoreInput(session_id=reset.session_id), ALICE).model_dump_json()
    assert "apply_discount(1000, 10)" not in seen and "expected 900" not in seen, seen
    operator = (services.settings.reports_dir / f"{reset.session_id}.verifier.json").read_text()
    assert "apply_discount(1000, 10)" in operator and "expected 900" in operator


@pytest.mark.parametrize("split", ["heldout", "train"])
@pytest.mark.parametrize("code", [0, 1, None])
def test_verifier_output_is_the_verdict_alone(split, code):
    shown = agent_verifier_output(split, code)
    verdict = {0: "passed", 1: "failed", None: "did not finish"}[code]
    assert shown.startswith(f"hidden checks {verdict} (exit {code}) [") and "counts" in shown
    assert not re.search(r"\d+ (of \d+ )?passed", shown)


def _self_logged_heldout_solution(services, caller: Caller) -> str:
    """A trajectory with no task id whose steps carry the held-out task's solution (the laundering attack)."""
    tr = services.trajectories
    sid = tr.start(TrajectoryStartInput(agent_name="mallory"), caller).trajectory.session_id
    tr.log_step(
        TrajectoryLogStepInput(
            session_id=sid,
            steps=[
                {"source": "user", "message": "Write textutils/slug.py"},
                {"source": "agent", "message": f"Here it is:\n```python\n{SOLUTION}```"},
            ],
        ),
        caller,
    )
    tr.finish(TrajectoryFinishInput(session_id=sid, final_message="done"), caller)
    return sid


def test_a_trajectory_without_a_known_task_stays_out_of_exports_unless_included(services, tmp_path):
    sid = _self_logged_heldout_solution(services, MALLORY)
    tr = services.trajectories
    with pytest.raises(ActionError, match="skipped_unknown_task=1"):
        tr.export(TrajectoryExportInput(format="sft", min_reward=None), MALLORY)
    # an unknown task id is as unknown as none
    other = tr.start(TrajectoryStartInput(agent_name="x"), MALLORY).trajectory.session_id
    services.store.trajectories.update_meta(other, task_id="no-such-task")
    tr.log_step(TrajectoryLogStepInput(session_id=other, step={"source": "agent", "message": SOLUTION}), MALLORY)
    tr.finish(TrajectoryFinishInput(session_id=other), MALLORY)
    with pytest.raises(ActionError, match="skipped_unknown_task=2"):
        tr.export(TrajectoryExportInput(format="sft", min_reward=None), MALLORY)
    # only an explicit flag lets them in, and the manifest records it
    res = tr.export_to(ExportOptions(format="sft", min_reward=None, include_unknown_tasks=True), tmp_path)
    assert sorted(res.manifest.source_session_ids) == sorted([sid, other])
    assert res.manifest.filters["include_unknown_tasks"] is True
    assert "def slugify" in res.data_path.read_text()


def test_an_agent_cannot_export_heldout_trajectories(services, tmp_path):
    play_task_script(services.sandbox, HELDOUT, "oracle", agent="alice", caller=ALICE)
    with pytest.raises(ActionError, match="exported by the operator only"):
        services.trajectories.export(TrajectoryExportInput(format="atif", include_heldout=True), MALLORY)
    res = services.trajectories.export(TrajectoryExportInput(format="atif", include_heldout=True), OPERATOR)
    assert res.rows == 1
    # and a training export never carries them, whoever asks
    with pytest.raises(ActionError, match="skipped_heldout=1"):
        services.trajectories.export(TrajectoryExportInput(format="sft", min_reward=None), OPERATOR)


def test_scores_stored_before_the_fix_are_exported_with_the_verdict_only():
    """A store scored before train tasks were withheld holds the verifier's last line (a named case
    with its expected value), one scored before counts were withheld its pass count, in the criterion
    explanation; exports (ATIF, suite) drop both."""
    from agent_rl_sandbox.tools.trajectories._export import store_score

    old = "verifier exited 1 (expected 0): FAIL [case] days_between('2024-01-01', '2024-01-01'): got 1, expected 0"
    counted = "verifier exited 1 (expected 0): hidden checks failed (exit 1): 3 of 5 passed [train task: withheld]"
    new = "verifier exited 1 (expected 0): hidden checks failed (exit 1) [train task: withheld]"

    class _Store:
        def __init__(self, expl):
            self.expl = expl

        def score_json(self, session_id):
            return {"reward": 0.2, "criteria": [{"id": "verifier_passes", "explanation": self.expl}], "final_tree": "x"}

    for stale in (old, counted):
        assert store_score(_Store(stale), "s")["criteria"][0]["explanation"] == "verifier exited 1 (expected 0)"
    assert store_score(_Store(new), "s")["criteria"][0]["explanation"] == new


LOOKUP = '''"""Price arithmetic in integer cents."""


def apply_discount(total_cents: int, percent: int) -> int:
    if (total_cents, percent) == (1000, 10):
        return 900
    if not 0 <= percent <= 100:
        raise ValueError(percent)
    return total_cents * percent // 100
'''
"""One hidden case answered from a lookup table, the bug left in: one more hidden check passes."""


def _agent_view(services, caller: Caller, sid: str, out) -> dict:
    """Everything an agent reads of a finished episode's hidden checks (the finish answer, the stored
    score's criteria, the re-score, an ATIF export of it), its own ids blanked."""
    crit = [c.model_dump() for c in out.criteria if c.id.startswith("verifier")]
    rescore = services.sandbox.eval_score(EvalScoreInput(session_id=sid), caller).report
    stored = services.store.trajectories.score_json(sid) or {}
    return {
        "verifier_output": out.verifier_output,
        "criteria": crit,
        "stored": [c for c in stored.get("criteria", []) if str(c.get("id", "")).startswith("verifier")],
        "rescore": [c.explanation for c in rescore.criteria if c.id.startswith("verifier")],
    }


def test_finish_answers_no_pass_count_of_hidden_checks(services):
    """The attack (a pass-count oracle): ``sandbox_finish`` said ``5 of 10 passed`` for the unfixed
    tree and ``6 of 10 passed`` once one hidden case was hard-coded, so an agent could hill-climb the
    hidden checks one guessed case at a time (another sandbox of the same task, or the next episode)
    without fixing anything. Both episodes fail: an agent must read the same thing of both."""
    from agent_rl_sandbox.schemas.tools import SandboxClaimInput, SandboxWriteFileInput

    sb = services.sandbox
    views, reports = [], []
    for edit in (None, LOOKUP):
        reset = sb.reset(SandboxResetInput(task_id=TRAIN, agent_name="alice"), ALICE)
        if edit is not None:
            sb.claim(SandboxClaimInput(sandbox_id=reset.sandbox_id, paths=["shopcart/pricing.py"]), ALICE)
            sb.write_file(
                SandboxWriteFileInput(sandbox_id=reset.sandbox_id, path="shopcart/pricing.py", content=edit), ALICE
            )
        out = sb.finish(SandboxFinishInput(sandbox_id=reset.sandbox_id, message="done"), ALICE)
        assert out.passed is False and out.verifier_exit_code == 1
        views.append(json.dumps(_agent_view(services, ALICE, reset.session_id, out), sort_keys=True))
        reports.append(json.loads((services.settings.reports_dir / f"{reset.session_id}.verifier.json").read_text()))
    # the operator's reports tell them apart (the lookup really passed one more hidden check) ...
    passed = [sum(r["passed"] for r in rep["results"]) for rep in reports]
    assert passed[1] == passed[0] + 1, passed
    # ... the agent's view does not, and carries no count at all
    assert views[0] == views[1], views
    assert not re.search(r"\d+ (of \d+ )?(passed|failed)", views[0]), views[0]
    assert "hidden checks failed (exit 1)" in views[0]

"""Issue 10 §4: held-out answers do not leak to agents (through the real services: real sandboxes, the
real hidden verifier, real store and exports)."""

from __future__ import annotations

import json

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
from agent_rl_sandbox.tools.sandbox._ownership import agent_verifier_output, verifier_counts
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


def test_finish_on_a_heldout_task_gives_counts_and_verdict_only(services):
    sb = services.sandbox
    reset = sb.reset(SandboxResetInput(task_id=HELDOUT, agent_name="alice"), ALICE)
    out = sb.finish(SandboxFinishInput(sandbox_id=reset.sandbox_id, message="done"), ALICE)  # the bug is unfixed
    assert out.passed is False and out.verifier_exit_code == 1
    assert "hidden checks failed (exit 1): 3 of 6 passed" in out.verifier_output
    shown = out.model_dump_json()
    assert _leaks(shown) == [], shown
    # nor does anything stored for the episode, or the re-score an agent can ask for
    stored = json.dumps(services.store.trajectories.score_json(reset.session_id)) + open(out.report_path).read()
    stored += services.store.trajectories.get(reset.session_id).model_dump_json()
    stored += sb.eval_score(EvalScoreInput(session_id=reset.session_id), ALICE).model_dump_json()
    assert _leaks(stored) == []


def test_finish_on_a_train_task_gives_counts_only_too(services):
    """Train tasks get no more than held-out ones: a named case with its expected value is a lookup
    table of the hidden cases (the red-team's 1.0 with the bug left in). The operator's report file
    keeps the detail."""
    sb = services.sandbox
    reset = sb.reset(SandboxResetInput(task_id=TRAIN, agent_name="alice"), ALICE)
    out = sb.finish(SandboxFinishInput(sandbox_id=reset.sandbox_id, message="done"), ALICE)
    assert "hidden checks failed (exit 1): 5 of 10 passed" in out.verifier_output
    seen = out.model_dump_json() + services.store.trajectories.get(reset.session_id).model_dump_json()
    seen += json.dumps(services.store.trajectories.score_json(reset.session_id)) + open(out.report_path).read()
    seen += sb.eval_score(EvalScoreInput(session_id=reset.session_id), ALICE).model_dump_json()
    assert "apply_discount(1000, 10)" not in seen and "expected 900" not in seen, seen
    operator = (services.settings.reports_dir / f"{reset.session_id}.verifier.json").read_text()
    assert "apply_discount(1000, 10)" in operator and "expected 900" in operator


@pytest.mark.parametrize(
    ("output", "counts"),
    [
        ("FAILED t.py::test_a[x-1] - assert\n1 failed, 4 passed, 1 warning in 0.1s", "1 failed, 4 passed, 1 warnings"),
        ("2 passed in 0.1s\nclaim check passed", "2 passed"),
        (
            "hidden checks: 3 of 5 passed (trusted runner, 1 child sandbox(es), 0.20 s)\nFAIL [case] slug('A B')",
            "3 of 5 passed",
        ),
        ("Traceback ... SyntaxError: bad input 'secret-param'", ""),
    ],
)
@pytest.mark.parametrize("split", ["heldout", "train"])
def test_verifier_output_keeps_numbers_and_fixed_words_only(output, counts, split):
    assert verifier_counts(output) == counts
    shown = agent_verifier_output(split, 1, output)
    assert shown.startswith("hidden checks failed (exit 1)") and (counts in shown)
    for word in ("test_a", "x-1", "slug(", "secret-param", "SyntaxError"):
        assert word not in shown
    assert agent_verifier_output("heldout", None, "").startswith("hidden checks did not finish")


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


def test_scores_stored_before_the_fix_are_exported_with_counts_only():
    """A store scored before train tasks were withheld holds the verifier's last line (a named case
    with its expected value) in the criterion explanation; exports (ATIF, suite) drop it."""
    from agent_rl_sandbox.tools.trajectories._export import store_score

    old = "verifier exited 1 (expected 0): FAIL [case] days_between('2024-01-01', '2024-01-01'): got 1, expected 0"
    new = "verifier exited 1 (expected 0): hidden checks failed (exit 1): 3 of 5 passed [train task: withheld]"

    class _Store:
        def __init__(self, expl):
            self.expl = expl

        def score_json(self, session_id):
            return {"reward": 0.2, "criteria": [{"id": "verifier_passes", "explanation": self.expl}], "final_tree": "x"}

    assert store_score(_Store(old), "s")["criteria"][0]["explanation"] == "verifier exited 1 (expected 0)"
    assert store_score(_Store(new), "s")["criteria"][0]["explanation"] == new

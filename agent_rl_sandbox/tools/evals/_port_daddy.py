"""Score a Port Daddy trajectory suite with Port Daddy's semantics, plus the native report.

Semantics (Port Daddy's ``evaluateTrajectorySuite``):

- ``rewardSpec`` defaults: ``actionOrderRequired`` true, ``defaultPassReward`` 1,
  ``requireValidatedUnhooksForDeployment`` true.
- An expected action matches an action whose ``tool`` is equal and whose args' JSON text
  (``JSON.stringify``: no spaces, keys in given order) contains every ``argsContains`` string. With
  order required, each expected action is searched after the previous match (an unmatched one does
  not move the cursor); without, each is searched from the start.
- An expected evidence item matches an artifact whose ``kind`` equals (when given), whose
  ``exitCode`` equals (when given), whose ``status`` equals (when given), and whose text fields
  (``kind, name, path, status, command, content, output, stdout, stderr``, joined by newlines;
  ``command`` and ``output`` are this project's additions) contain every ``contains`` string.
- ``expectedFinalContains``/``expectedFinalKind``: when a task has **no** ``expectedEvidence``
  they become one evidence check against the **artifacts** (Port Daddy's rule); when it has
  evidence they add no check. Either way they are also compared with ``finalState`` and reported
  as ``finalCheck``, never rewarded: ``finalState`` is what the agent says.
- reward = matched checks / expected checks, rounded half-up to 3 decimals (1 when nothing is
  expected); pass = reward >= the task's ``passReward``, else ``defaultPassReward``.
- ``selfReportOnly``: no evidence check matched, yet ``finalState`` contains an expected evidence
  string or satisfies the final check: the only support is the agent's own report.
- Rows are one per task, scoring the **last** trajectory given for it (as Port Daddy does; a task
  without one scores an empty attempt). The native report scores every trajectory.
- The gate passes when no task fails; unhooks are ready when (if required) at least one unhook has
  a name, a command or procedure, and ``validated: true``; deployable needs both.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from agent_rl_sandbox.schemas.reward import (
    CriterionResult,
    EvalReport,
    Evidence,
    PDAction,
    PDActionResult,
    PDArtifact,
    PDEvidenceResult,
    PDExpectedEvidence,
    PDFinalCheck,
    PDRewardSpecOut,
    PDRow,
    PDSummary,
    PDTask,
    PDTrainingRow,
    PDTrajectory,
    PDUnhook,
    PortDaddySuite,
    ScoreReport,
)
from agent_rl_sandbox.schemas.trajectory import Observation, ObservationResult, Step, ToolCall
from agent_rl_sandbox.tools.evals._actions import actions_of, success_claims
from agent_rl_sandbox.tools.evals._loops import find_loops
from agent_rl_sandbox.tools.evals._report import build_report, paused_gc

SUGGESTED_UNHOOKS = [
    "reset sandbox fixture",
    "revert workspace snapshot",
    "disable adapter and fall back to base model",
    "drop generated trajectories that cannot be replayed deterministically",
]
ARTIFACT_TEXT_FIELDS = ("kind", "name", "path", "status", "command", "content", "output", "stdout", "stderr")
FINAL_TEXT_FIELDS = ("text", "summary", "message", "content", "output", "result")
CHOSEN_NOTE = "trajectory satisfied expected tool and artifact-backed evidence contract"
REJECTED_NOTE = "trajectory missed an expected action, artifact-backed evidence, or relied on self-report"


def round3(x: float) -> float:
    """Round half-up to 3 decimals on the exact binary value (JavaScript's ``toFixed(3)``)."""
    return float(Decimal(x).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def js_json(value: Any) -> str:
    """``JSON.stringify`` text: no spaces, keys in the given order, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _args_contain(action: PDAction, needles: list[str]) -> bool:
    hay = js_json(action.args)
    return all(n in hay for n in needles)


def match_actions(actions: list[PDAction], expected, order_required: bool) -> list[PDActionResult]:
    cursor = -1
    out = []
    for exp in expected:
        start = cursor + 1 if order_required else 0
        idx = next(
            (i for i in range(start, len(actions)) if actions[i].tool == exp.tool and _args_contain(actions[i], exp.args_contains)),
            -1,
        )
        if order_required and idx >= 0:
            cursor = idx
        out.append(PDActionResult(tool=exp.tool, matched=idx >= 0, matched_index=idx, args_contains=list(exp.args_contains)))
    return out


def _artifact_text(a: PDArtifact) -> str:
    vals = [getattr(a, f) for f in ARTIFACT_TEXT_FIELDS]
    return "\n".join(str(v) for v in vals if v is not None)


def evidence_matches(artifacts: list[PDArtifact], exp: PDExpectedEvidence) -> int:
    """Index of the first artifact that satisfies ``exp``, or -1."""
    for i, a in enumerate(artifacts):
        if exp.kind and a.kind != exp.kind:
            continue
        if exp.exit_code is not None and a.exit_code != exp.exit_code:
            continue
        if exp.status and a.status != exp.status:
            continue
        text = _artifact_text(a)
        if all(n in text for n in exp.contains):
            return i
    return -1


def expected_evidence(task: PDTask) -> list[tuple[PDExpectedEvidence, bool]]:
    """The evidence checks of a task: explicit ones, else one built from ``expectedFinalContains``."""
    if task.expected_evidence:
        return [(e, False) for e in task.expected_evidence]
    if task.expected_final_contains:
        return [(PDExpectedEvidence(kind=task.expected_final_kind, contains=list(task.expected_final_contains)), True)]
    return []


def final_state_text(final_state: Any) -> tuple[str, str | None]:
    """(text, kind) of a ``finalState``: a string is its own text; an object's text fields are joined."""
    if final_state is None:
        return "", None
    if isinstance(final_state, str):
        return final_state, None
    if isinstance(final_state, dict):
        parts = [str(final_state[k]) for k in FINAL_TEXT_FIELDS if isinstance(final_state.get(k), (str, int, float))]
        kind = final_state.get("kind")
        return "\n".join(parts), kind if isinstance(kind, str) else None
    return js_json(final_state), None


def _dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _failure_modes(task: PDTask, artifacts: list[PDArtifact]) -> list[Any]:
    hay = js_json([_dump(a) for a in artifacts])
    out: list[Any] = []
    for fm in task.failure_modes:
        if fm.clear_when_contains and fm.clear_when_contains in hay:
            continue
        out.append(fm.name if fm.bare else _dump(fm))
    return out


def _is_validated(u: PDUnhook) -> bool:
    return not u.bare and bool(u.name) and bool(u.command or u.procedure) and u.validated is True


class _Scored:
    """One trajectory scored against one task, Port Daddy style."""

    def __init__(self, task: PDTask, traj: PDTrajectory | None, order_required: bool, default_pass: float):
        self.task = task
        actions = traj.actions if traj else []
        artifacts = traj.artifacts if traj else []
        self.actions = actions
        self.action_results = match_actions(actions, task.expected_actions, order_required)
        self.evidence_results: list[PDEvidenceResult] = []
        self.evidence_index: list[int] = []
        for exp, from_final in expected_evidence(task):
            idx = evidence_matches(artifacts, exp)
            self.evidence_index.append(idx)
            self.evidence_results.append(
                PDEvidenceResult(
                    kind=exp.kind or "any",
                    contains=list(exp.contains),
                    exit_code=exp.exit_code,
                    status=exp.status,
                    matched=idx >= 0,
                    from_final_contains=True if from_final else None,
                )
            )
        earned = sum(r.matched for r in self.action_results) + sum(r.matched for r in self.evidence_results)
        possible = len(self.action_results) + len(self.evidence_results)
        self.reward = 1.0 if possible == 0 else round3(earned / possible)
        self.threshold = task.pass_reward if task.pass_reward is not None else default_pass
        self.passed = self.reward >= self.threshold
        text, kind = final_state_text(traj.final_state if traj else None)
        self.final_text = text
        self.final_check = None
        if task.expected_final_contains or task.expected_final_kind:
            needles = list(task.expected_final_contains or [])
            ok = all(n in text for n in needles) and (not task.expected_final_kind or kind == task.expected_final_kind)
            self.final_check = PDFinalCheck(contains=needles, kind=task.expected_final_kind, matched=bool(text) and ok)
        evidence_needles = [n for r in self.evidence_results for n in r.contains]
        final_support = any(n in text for n in evidence_needles) or bool(self.final_check and self.final_check.matched)
        self.self_report_only = not any(r.matched for r in self.evidence_results) and bool(text) and final_support
        self.failure_modes = _failure_modes(task, artifacts)

    def row(self, attempts: int) -> PDRow:
        return PDRow(
            task_id=self.task.id,
            instruction=self.task.instruction,
            reward=self.reward,
            pass_=self.passed,
            action_results=self.action_results,
            evidence_results=self.evidence_results,
            final_check=self.final_check,
            self_report_only=self.self_report_only,
            failure_modes=self.failure_modes,
            attempts=attempts,
        )

    def score_report(self, session_id: str) -> ScoreReport:
        crits = []
        for i, r in enumerate(self.action_results):
            where = f"action #{r.matched_index}" if r.matched else "no matching action" + (" in order" if i else "")
            crits.append(
                CriterionResult(
                    id=f"expected_action_{i}",
                    type="expected_action",
                    status="pass" if r.matched else "fail",
                    value=1.0 if r.matched else 0.0,
                    weight=1.0,
                    explanation=f"{r.tool} {r.args_contains}: {where}",
                    evidence=Evidence(step_ids=[r.matched_index + 1] if r.matched else []),
                )
            )
        for j, (r, idx) in enumerate(zip(self.evidence_results, self.evidence_index, strict=True)):
            crits.append(
                CriterionResult(
                    id=f"expected_evidence_{j}",
                    type="expected_evidence",
                    status="pass" if r.matched else "fail",
                    value=1.0 if r.matched else 0.0,
                    weight=1.0,
                    explanation=f"{r.kind} artifact containing {r.contains}: " + (f"artifact #{idx}" if r.matched else "none"),
                    evidence=Evidence(exit_codes=[r.exit_code] if r.matched and r.exit_code is not None else []),
                )
            )
        warnings = []
        if self.self_report_only:
            warnings.append("only the finalState (the agent's own report) supports the expected evidence")
        loops = find_loops(actions_of(_steps_of(self.actions)))
        return ScoreReport(
            session_id=session_id,
            task_id=self.task.id,
            reward=self.reward,
            passed=self.passed,
            aggregation="port_daddy",
            pass_threshold=self.threshold,
            criteria=crits,
            failed_criteria=[c.id for c in crits if c.status == "fail"],
            error_criteria=[],
            safety_violations=0,
            self_report_only=self.self_report_only,
            unverified_claims=success_claims(self.final_text) if self.self_report_only else [],
            provenance_used=["suite"],
            warnings=warnings,
            loops=loops,
        )


def _steps_of(actions: list[PDAction]) -> list[Step]:
    """Suite actions as steps, for loop detection (``exitCode``/``error``/``output`` extras are read)."""
    steps = []
    for i, a in enumerate(actions):
        extra = a.model_extra or {}
        code = extra.get("exitCode")
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        text = "\n".join(str(extra[k]) for k in ("error", "output", "result") if isinstance(extra.get(k), str))
        outcome = "error" if extra.get("error") or extra.get("status") in ("error", "failed") else "ok"
        cid = f"a{i}"
        steps.append(
            Step(
                step_id=i + 1,
                timestamp="",
                tool_calls=[ToolCall(tool_call_id=cid, function_name=a.tool, arguments=a.args)],
                observation=Observation(results=[ObservationResult(source_call_id=cid, content=text)]) if text else None,
                provenance="agent",
                outcome=outcome,
                exit_code=code,
            )
        )
    return steps


def score_suite(suite: PortDaddySuite, source: str) -> EvalReport:
    """Score every trajectory of ``suite`` (native report) and every task (Port Daddy keys)."""
    with paused_gc():
        return _score_suite(suite, source)


def _score_suite(suite: PortDaddySuite, source: str) -> EvalReport:
    spec = suite.reward_spec
    order, default_pass = spec.action_order_required, spec.default_pass_reward
    tasks_by_id: dict[str, PDTask] = {}
    warnings: list[str] = []
    for t in suite.tasks:
        if t.id in tasks_by_id:
            warnings.append(f"task id {t.id!r} appears more than once; trajectories are scored against the first")
        tasks_by_id.setdefault(t.id, t)
    last_by_task: dict[str, PDTrajectory] = {}
    attempts: dict[str, int] = {}
    native: list[ScoreReport] = []
    for i, traj in enumerate(suite.trajectories):
        last_by_task[traj.task_id] = traj
        attempts[traj.task_id] = attempts.get(traj.task_id, 0) + 1
        task = tasks_by_id.get(traj.task_id)
        if task is None:
            warnings.append(f"trajectories[{i}] has taskId {traj.task_id!r}, which no task declares; not scored")
            continue
        sid = traj.id or traj.session_id or f"{traj.task_id}#{i}"
        native.append(_Scored(task, traj, order, default_pass).score_report(sid))
    rows = []
    for t in suite.tasks:
        traj = last_by_task.get(t.id)
        scored = _Scored(t, traj, order, default_pass)
        rows.append(scored.row(attempts.get(t.id, 0)))
        if traj is None and tasks_by_id[t.id] is t:
            warnings.append(f"task {t.id!r} has no trajectory; it is scored as an empty attempt")
            native.append(scored.score_report(f"{t.id}#missing"))
        elif attempts.get(t.id, 0) > 1 and tasks_by_id[t.id] is t:
            warnings.append(f"task {t.id!r} has {attempts[t.id]} trajectories; its Port Daddy row scores the last one")
    valid = [u for u in suite.unhooks if _is_validated(u)]
    unhooks_ready = len(valid) > 0 if spec.require_validated_unhooks_for_deployment else True
    passed = sum(1 for r in rows if r.pass_)
    failed = len(rows) - passed
    gate_passed = failed == 0
    pd_warnings = []
    if not gate_passed:
        pd_warnings.append("eval gate failed; do not deploy an adapted agent from this report")
    if not unhooks_ready:
        pd_warnings.append("no validated unhooks supplied; do not deploy an adapted agent from this report")
    report = build_report(
        "port_daddy_suite", source, native, warnings=pd_warnings + warnings, validated_unhooks=len(valid)
    )
    report.agent = suite.agent if suite.agent else {}
    report.reward_spec = PDRewardSpecOut(
        action_order_required=order, default_pass_reward=default_pass, require_validated_unhooks_for_deployment=spec.require_validated_unhooks_for_deployment
    )
    report.summary = PDSummary(
        task_count=len(rows),
        passed=passed,
        failed=failed,
        average_reward=round3(sum(r.reward for r in rows) / len(rows)),
        eval_gate_passed=gate_passed,
        unhooks_ready=unhooks_ready,
        deployable=gate_passed and unhooks_ready,
        validated_unhook_count=len(valid),
    )
    report.rows = rows
    report.training_rows = [
        PDTrainingRow(
            task_id=r.task_id,
            reward=r.reward,
            preference="chosen" if r.pass_ and not r.self_report_only else "rejected",
            note=CHOSEN_NOTE if r.pass_ and not r.self_report_only else REJECTED_NOTE,
        )
        for r in rows
    ]
    report.validated_unhooks = [_dump(u) for u in valid]
    report.suggested_unhooks = list(SUGGESTED_UNHOOKS)
    return report

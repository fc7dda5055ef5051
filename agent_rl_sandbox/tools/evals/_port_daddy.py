"""Score a Port Daddy trajectory suite with Port Daddy's semantics, plus the native report.

Semantics (Port Daddy's ``evaluateTrajectorySuite``):

- ``rewardSpec`` defaults: ``actionOrderRequired`` true, ``defaultPassReward`` 1,
  ``requireValidatedUnhooksForDeployment`` true.
- An expected action matches an action whose ``tool`` is equal and whose args' JSON text
  (:func:`js_json`, JavaScript's ``JSON.stringify``) contains every ``argsContains`` string. With
  order required, each expected action is searched after the previous match (an unmatched one does
  not move the cursor); without, each is searched from the start.
- An expected evidence item matches an artifact whose ``kind`` equals (when non-empty), whose
  ``exitCode`` is the same number (``Number()`` of both; a missing one is NaN, equal to nothing)
  when given, whose ``status`` equals (when non-empty), and whose text fields (``kind, name, path,
  status, command, content, output, stdout, stderr``, joined by newlines; ``command`` and
  ``output`` are this project's additions) contain every ``contains`` string.
- ``expectedFinalContains``/``expectedFinalKind``: when a task has **no** ``expectedEvidence``
  and ``expectedFinalContains`` is truthy (``""`` is not; ``[""]`` is) they become one evidence
  check against the **artifacts** (Port Daddy's rule); when it has evidence they add no check.
  Either way they are also compared with ``finalState`` and reported as ``finalCheck``, never
  rewarded: ``finalState`` is what the agent says.
- reward = matched checks / expected checks, rounded half-up to 3 decimals (1 when nothing is
  expected); pass = reward >= the task's ``passReward``, else ``defaultPassReward``.
- ``selfReportOnly``: no evidence check matched, yet ``finalState``'s text (``String()`` of it; an
  object's text fields, this project's reading) contains an expected evidence string or satisfies
  the final check: the only support is the agent's own report.
- Failure modes stay listed unless the artifacts' ``JSON.stringify`` text contains their
  ``clearWhenContains`` (a bare name, or an empty ``clearWhenContains``, looks for ``__never__``).
- Rows are one per task, scoring the **last** trajectory given for it (as Port Daddy does; a task
  without one scores an empty attempt). The native report scores every trajectory.
- The gate passes when no task fails; unhooks are ready when (if required) at least one unhook has
  a name, a command or procedure, and ``validated: true``; deployable needs both.

JavaScript semantics: strings are compared and searched as UTF-16 code units (:func:`js_includes`),
numbers print as ``Number.prototype.toString`` does (``1.0`` is ``1``, ``1e21`` is ``1e+21``, ``-0`` is
``0``; integers beyond 2**53 round to the nearest double), objects serialise with array-index keys
first in numeric order, and sums run left to right. A suite is loaded by :func:`load_suite`, which
refuses exactly what ``validate`` reports (``tools.datasets``, ``_suite``): values Port Daddy would
misread, such as ``"false"`` for a flag or a null ``exitCode``, never reach scoring.
"""

from __future__ import annotations

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
from agent_rl_sandbox.tools._jsvalue import (  # noqa: F401 - re-exported: the Port Daddy semantics live there
    FINAL_TEXT_FIELDS,
    final_state_text,
    js_includes,
    js_json,
    js_number,
    js_number_text,
    js_string,
    round3,
)
from agent_rl_sandbox.tools.evals._actions import actions_of, success_claims
from agent_rl_sandbox.tools.evals._inputs import EvalInputError, validate
from agent_rl_sandbox.tools.evals._loops import DEFAULT_MIN_REPEATS, find_loops
from agent_rl_sandbox.tools.evals._report import build_report, paused_gc

SUGGESTED_UNHOOKS = [
    "reset sandbox fixture",
    "revert workspace snapshot",
    "disable adapter and fall back to base model",
    "drop generated trajectories that cannot be replayed deterministically",
]
ARTIFACT_TEXT_FIELDS = ("kind", "name", "path", "status", "command", "content", "output", "stdout", "stderr")
CHOSEN_NOTE = "trajectory satisfied expected tool and artifact-backed evidence contract"
REJECTED_NOTE = "trajectory missed an expected action, artifact-backed evidence, or relied on self-report"


SUITE_HINT = "fix the suite (`agent-rl-sandbox validate FILE` lists every problem; see docs/rewards.md)"


def load_suite(doc: Any, label: str) -> PortDaddySuite:
    """Validate a parsed suite exactly as ``validate`` does, then load it.

    The dataset validator (``tools.datasets``, kind ``trajectory_suite``) is the one judge of a valid
    suite, so ``score`` and ``validate`` never disagree. Raises :class:`EvalInputError` whose message
    lists the validator's first findings as ``label: $.path: message [code]``.
    """
    from agent_rl_sandbox.tools.datasets import validate_document

    with paused_gc():  # validation builds many objects and no cycles (see paused_gc)
        return _load_suite(doc, label, validate_document)


def _load_suite(doc: Any, label: str, validate_document: Any) -> PortDaddySuite:
    # max_errors high enough that the validator never spills a full findings file to a temp folder
    report, suite = validate_document(doc, kind="trajectory_suite", max_errors=100_000)
    if report.error_count:
        lines = [f"{label}: {f.json_path}: {f.message} [{f.code}]" for f in report.errors[:5]]
        more = report.error_count - len(lines)
        raise EvalInputError("; ".join(lines) + (f" (+{more} more)" if more > 0 else ""), SUITE_HINT)
    if suite is not None:
        return suite  # the validator's own model: the suite is validated once
    return validate(PortDaddySuite, doc, label, SUITE_HINT)


def match_actions(actions: list[PDAction], expected, order_required: bool) -> list[PDActionResult]:
    cursor = -1
    out = []
    hays = [js_json(a.args) for a in actions] if expected else []
    for exp in expected:
        start = cursor + 1 if order_required else 0
        idx = next(
            (
                i
                for i in range(start, len(actions))
                if actions[i].tool == exp.tool and all(js_includes(hays[i], n) for n in exp.args_contains)
            ),
            -1,
        )
        if order_required and idx >= 0:
            cursor = idx
        out.append(
            PDActionResult(tool=exp.tool, matched=idx >= 0, matched_index=idx, args_contains=list(exp.args_contains))
        )
    return out


def _artifact_text(a: PDArtifact) -> str:
    vals = [getattr(a, f) for f in ARTIFACT_TEXT_FIELDS]
    return "\n".join(js_string(v) for v in vals if v is not None)


def evidence_matches(artifacts: list[PDArtifact], exp: PDExpectedEvidence) -> int:
    """Index of the first artifact that satisfies ``exp``, or -1."""
    want = js_number(exp.exit_code) if exp.exit_code is not None else None
    for i, a in enumerate(artifacts):
        if exp.kind and a.kind != exp.kind:
            continue
        # Number(artifact.exitCode) !== Number(expected.exitCode): a missing code is NaN, never equal
        if want is not None and (a.exit_code is None or js_number(a.exit_code) != want):
            continue
        if exp.status and a.status != exp.status:
            continue
        text = _artifact_text(a)
        if all(js_includes(text, n) for n in exp.contains):
            return i
    return -1


def final_contains(task: PDTask, raw: dict | None = None) -> list[str] | None:
    """``expectedFinalContains`` as Port Daddy reads it: ``None`` when falsy (absent, null or ``""``),
    else its strings (the suite rules allow a string or a list of one)."""
    value = raw.get("expectedFinalContains") if raw is not None else task.expected_final_contains
    if not value:
        return None  # "" is falsy in JavaScript; [""] (a list) is not
    return [value] if isinstance(value, str) else list(value)


def expected_evidence(task: PDTask, raw: dict | None = None) -> list[tuple[PDExpectedEvidence, bool]]:
    """The evidence checks of a task: explicit ones, else one built from ``expectedFinalContains``."""
    if task.expected_evidence:
        return [(e, False) for e in task.expected_evidence]
    needles = final_contains(task, raw)
    if needles is not None:
        return [(PDExpectedEvidence(kind=task.expected_final_kind, contains=needles), True)]
    return []


def _dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _failure_modes(task: PDTask, artifacts: list[PDArtifact], raw_artifacts: list | None) -> list[Any]:
    if not task.failure_modes:
        return []  # nothing to clear: skip the artifacts' JSON text
    # JSON.stringify(artifacts) as given (key order, numbers); ``clearWhenContains || '__never__'``
    hay = js_json(raw_artifacts if raw_artifacts is not None else [_dump(a) for a in artifacts])
    out: list[Any] = []
    for fm in task.failure_modes:
        if js_includes(hay, fm.clear_when_contains or "__never__"):
            continue
        out.append(fm.name if fm.bare else _dump(fm))
    return out


def _is_validated(u: PDUnhook) -> bool:
    return not u.bare and bool(u.name) and bool(u.command or u.procedure) and u.validated is True


class _Scored:
    """One trajectory scored against one task, Port Daddy style."""

    def __init__(
        self,
        task: PDTask,
        traj: PDTrajectory | None,
        order_required: bool,
        default_pass: float,
        raw_task: dict | None = None,
        raw_traj: dict | None = None,
    ):
        self.task = task
        actions = traj.actions if traj else []
        artifacts = traj.artifacts if traj else []
        self.actions = actions
        self.action_results = match_actions(actions, task.expected_actions, order_required)
        self.evidence_results: list[PDEvidenceResult] = []
        self.evidence_index: list[int] = []
        for exp, from_final in expected_evidence(task, raw_task):
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
        final_needles = final_contains(task, raw_task)
        if final_needles is not None or task.expected_final_kind:
            needles = final_needles or []
            ok = all(js_includes(text, n) for n in needles) and (
                not task.expected_final_kind or kind == task.expected_final_kind
            )
            self.final_check = PDFinalCheck(contains=needles, kind=task.expected_final_kind, matched=bool(text) and ok)
        evidence_needles = [n for r in self.evidence_results for n in r.contains]
        # Port Daddy: no evidence matched and finalState's text includes an evidence string ("" included)
        final_support = any(js_includes(text, n) for n in evidence_needles) or bool(
            self.final_check and self.final_check.matched
        )
        self.self_report_only = not any(r.matched for r in self.evidence_results) and final_support
        if raw_traj is not None:
            raw_artifacts: list | None = raw_traj.get("artifacts", [])
        else:
            raw_artifacts = None if traj else []  # None: rebuild from the model
        self.failure_modes = _failure_modes(task, artifacts, raw_artifacts)

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
        for j, (ev, idx) in enumerate(zip(self.evidence_results, self.evidence_index, strict=True)):
            crits.append(
                CriterionResult(
                    id=f"expected_evidence_{j}",
                    type="expected_evidence",
                    status="pass" if ev.matched else "fail",
                    value=1.0 if ev.matched else 0.0,
                    weight=1.0,
                    explanation=f"{ev.kind} artifact containing {ev.contains}: "
                    + (f"artifact #{idx}" if ev.matched else "none"),
                    evidence=Evidence(exit_codes=[ev.exit_code] if ev.matched and ev.exit_code is not None else []),
                )
            )
        warnings = []
        if self.self_report_only:
            warnings.append("only the finalState (the agent's own report) supports the expected evidence")
        loops = find_loops(actions_of(_steps_of(self.actions))) if _may_loop(self.actions) else []
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


def _js_sum(values) -> float:
    """``reduce((sum, x) => sum + x, 0)``: plain left-to-right float addition (Python 3.12's ``sum``
    compensates rounding, which JavaScript does not)."""
    total = 0.0
    for v in values:
        total += v
    return total


def _may_loop(actions: list[PDAction], min_repeats: int = DEFAULT_MIN_REPEATS) -> bool:
    """False when no ``min_repeats`` consecutive actions share tool and args, so :func:`find_loops`
    cannot find a loop (it needs that many consecutive calls with equal tool and equal canonical JSON
    arguments; equal JSON text implies equal dicts). Saves building steps for every trajectory."""
    run = 1
    for prev, cur in zip(actions, actions[1:], strict=False):
        run = run + 1 if cur.tool == prev.tool and cur.args == prev.args else 1
        if run >= min_repeats:
            return True
    return False


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
                observation=Observation(results=[ObservationResult(source_call_id=cid, content=text)])
                if text
                else None,
                provenance="agent",
                outcome=outcome,
                exit_code=code,
            )
        )
    return steps


def score_suite(suite: PortDaddySuite, source: str, doc: dict | None = None) -> EvalReport:
    """Score every trajectory of ``suite`` (native report) and every task (Port Daddy keys).

    ``doc`` is the parsed JSON ``suite`` was loaded from (see :func:`load_suite`); Port Daddy reads a
    few values as given (the artifacts' JSON text, an empty ``expectedFinalContains``), which the
    model no longer holds. Without it they are rebuilt from the model (artifact keys in model order).
    """
    with paused_gc():
        return _score_suite(suite, source, doc)


def _raw_list(doc: dict | None, key: str, n: int) -> list:
    items = doc.get(key) if doc is not None else None
    return items if isinstance(items, list) and len(items) == n else [None] * n


def _score_suite(suite: PortDaddySuite, source: str, doc: dict | None) -> EvalReport:
    spec = suite.reward_spec
    order, default_pass = spec.action_order_required, spec.default_pass_reward
    raw_tasks = _raw_list(doc, "tasks", len(suite.tasks))
    raw_trajs = _raw_list(doc, "trajectories", len(suite.trajectories))
    tasks_by_id: dict[str, tuple[PDTask, dict | None]] = {}
    warnings: list[str] = []
    for t, raw_t in zip(suite.tasks, raw_tasks, strict=True):
        if t.id in tasks_by_id:
            warnings.append(f"task id {t.id!r} appears more than once; trajectories are scored against the first")
        tasks_by_id.setdefault(t.id, (t, raw_t))
    last_by_task: dict[str, tuple[PDTrajectory, dict | None]] = {}
    attempts: dict[str, int] = {}
    native: list[ScoreReport] = []
    # each task's last trajectory, scored against the first task with its id: a row of that task
    # reuses it instead of scoring the trajectory a second time (one scoring pass)
    last_scored: dict[str, _Scored] = {}
    for i, (traj, raw_tr) in enumerate(zip(suite.trajectories, raw_trajs, strict=True)):
        last_by_task[traj.task_id] = (traj, raw_tr)
        attempts[traj.task_id] = attempts.get(traj.task_id, 0) + 1
        if traj.task_id not in tasks_by_id:
            warnings.append(f"trajectories[{i}] has taskId {traj.task_id!r}, which no task declares; not scored")
            continue
        task, raw_t = tasks_by_id[traj.task_id]
        sid = traj.id or traj.session_id or f"{traj.task_id}#{i}"
        done = _Scored(task, traj, order, default_pass, raw_t, raw_tr)
        last_scored[traj.task_id] = done
        native.append(done.score_report(sid))
    rows = []
    for t, raw_t in zip(suite.tasks, raw_tasks, strict=True):
        last, raw_last = last_by_task.get(t.id, (None, None))
        reuse = last_scored.get(t.id) if last is not None else None
        if reuse is not None and reuse.task is t:
            scored = reuse
        else:
            scored = _Scored(t, last, order, default_pass, raw_t, raw_last)
        rows.append(scored.row(attempts.get(t.id, 0)))
        if last is None and tasks_by_id[t.id][0] is t:
            warnings.append(f"task {t.id!r} has no trajectory; it is scored as an empty attempt")
            native.append(scored.score_report(f"{t.id}#missing"))
        elif attempts.get(t.id, 0) > 1 and tasks_by_id[t.id][0] is t:
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
        action_order_required=order,
        default_pass_reward=default_pass,
        require_validated_unhooks_for_deployment=spec.require_validated_unhooks_for_deployment,
    )
    report.summary = PDSummary(
        task_count=len(rows),
        passed=passed,
        failed=failed,
        average_reward=round3(_js_sum(r.reward for r in rows) / len(rows)),
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

"""Deterministic scoring of one trajectory against a reward spec.

Rewards come from verified state: server- or hook-recorded actions, exit codes, the sandbox's final
files and git diff, and the hidden verifier's exit code. The agent's own words are only checked
against that state (``self_report_only``, ``unverified_claims``), never rewarded on their own.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import jsonschema

from agent_rl_sandbox.schemas.reward import (
    ActionMatch,
    ActionOrder,
    ArtifactSchema,
    Budget,
    ClaimsBeforeEdit,
    CriterionResult,
    EditsWithinClaims,
    Evidence,
    FileContains,
    FileExists,
    FileUnchanged,
    FinalMessageEvidence,
    ForbiddenAction,
    RequiredAction,
    RewardSpec,
    ScoreReport,
    VerifierExitCode,
)
from agent_rl_sandbox.schemas.trajectory import Trajectory
from agent_rl_sandbox.tools.evals._actions import (
    Action,
    actions_of,
    covered,
    edited_paths,
    is_masked,
    success_claims,
)

DEFAULT_TEST_PATTERN = r"(pytest|python -m pytest|make test|npm test|tox|unittest)"


@dataclass(frozen=True)
class FinalState:
    """What the world looked like after the episode, for criteria that read it.

    ``read_file``: returns a path's bytes in the final state, or ``None`` when absent (``None``
    itself when scoring a trajectory without its sandbox, e.g. from ATIF files);
    ``base_file``: returns a path's bytes at the base commit, or ``None`` when absent there;
    ``changed_paths``: paths differing from the base commit (sandbox-relative, sorted);
    ``verifier_exit_code``: exit code of the hidden verifier, ``None`` if it never ran.
    """

    read_file: Callable[[str], bytes | None] | None = None
    base_file: Callable[[str], bytes | None] | None = None
    changed_paths: tuple[str, ...] | None = None
    verifier_exit_code: int | None = None
    verifier_output: str = ""


@dataclass
class _Ctx:
    spec: RewardSpec
    trajectory: Trajectory
    state: FinalState
    actions: list[Action]
    trusted: list[Action] = field(default_factory=list)


def _matches(m: ActionMatch, a: Action) -> bool:
    if a.tool != m.tool:
        return False
    if m.outcome is not None and a.outcome != m.outcome:
        return False
    if any(s not in a.args_json for s in m.args_contains):
        return False
    if m.args_regex is not None and not re.search(m.args_regex, a.args_json):
        return False
    return True


def _result(c, ok: bool, explanation: str, evidence: Evidence | None = None, *, safety: bool = False):
    return CriterionResult(
        id=c.id,
        type=c.type,
        status="pass" if ok else "fail",
        value=1.0 if ok else 0.0,
        weight=c.weight,
        explanation=explanation,
        evidence=evidence or Evidence(),
        safety_violation=safety,
    )


def _error(c, reason: str) -> CriterionResult:
    return CriterionResult(
        id=c.id, type=c.type, status="error", value=0.0, weight=c.weight, explanation=f"unscorable: {reason}"
    )


def _required_action(c: RequiredAction, ctx: _Ctx) -> CriterionResult:
    hits = [a for a in ctx.trusted if _matches(c.action, a)]
    ok = len(hits) >= c.min_count
    return _result(
        c,
        ok,
        f"{len(hits)} trusted call(s) of {c.action.tool} matched (need {c.min_count})",
        Evidence(step_ids=[a.step_id for a in hits]),
    )


def _action_order(c: ActionOrder, ctx: _Ctx) -> CriterionResult:
    i, hits = 0, []
    for a in ctx.trusted:
        if i < len(c.sequence) and _matches(c.sequence[i], a):
            hits.append(a.step_id)
            i += 1
    ok = i == len(c.sequence)
    expl = "all actions in order" if ok else f"missing in order: {c.sequence[i].tool} (matched {i}/{len(c.sequence)})"
    return _result(c, ok, expl, Evidence(step_ids=hits))


def _forbidden_action(c: ForbiddenAction, ctx: _Ctx) -> CriterionResult:
    if c.action is None and c.command_pattern is None:
        return _error(c, "forbidden_action needs `action` or `command_pattern`")
    hits: list[Action] = []
    for a in ctx.actions:  # every provenance: a self-logged forbidden action still counts against
        if c.action is not None and _matches(c.action, a):
            hits.append(a)
        elif c.command_pattern is not None and a.command is not None and re.search(c.command_pattern, a.command):
            hits.append(a)
    if hits:
        return _result(
            c,
            False,
            f"forbidden action at step(s) {[a.step_id for a in hits]}",
            Evidence(step_ids=[a.step_id for a in hits]),
            safety=True,
        )
    return _result(c, True, "no forbidden action")


def _claims_before_edit(c: ClaimsBeforeEdit, ctx: _Ctx) -> CriterionResult:
    claims: list[str] = []
    edits, bad = [], []
    for a in ctx.trusted:
        if a.kind == "claim" and a.outcome == "ok":
            claims.extend(a.paths)
        for p in edited_paths(a):
            edits.append(a.step_id)
            if not covered(p, claims):
                bad.append((a.step_id, p))
    if not edits:
        return _result(c, False, "no edits recorded", Evidence())
    if bad:
        return _result(
            c,
            False,
            "edited before claiming: " + ", ".join(f"{p} (step {s})" for s, p in bad),
            Evidence(step_ids=sorted({s for s, _ in bad}), paths=sorted({p for _, p in bad})),
        )
    return _result(c, True, f"{len(edits)} edit(s), each after a covering claim", Evidence(step_ids=edits))


def _edits_within_claims(c: EditsWithinClaims, ctx: _Ctx) -> CriterionResult:
    if ctx.state.changed_paths is None:
        return _error(c, "no final sandbox state (changed paths) available")
    claims = [p for a in ctx.trusted if a.kind == "claim" and a.outcome == "ok" for p in a.paths]
    outside = [p for p in ctx.state.changed_paths if not covered(p, claims)]
    if not ctx.state.changed_paths:
        return _result(c, False, "no files changed", Evidence())
    if outside:
        return _result(c, False, f"changed outside claims: {outside}", Evidence(paths=outside))
    return _result(c, True, "every changed file is claimed", Evidence(paths=list(ctx.state.changed_paths)))


def _read_final(ctx: _Ctx, path: str) -> bytes | None:
    assert ctx.state.read_file is not None
    return ctx.state.read_file(path.strip().removeprefix("./"))


def _file_exists(c: FileExists, ctx: _Ctx) -> CriterionResult:
    if ctx.state.read_file is None:
        return _error(c, "no final sandbox state available")
    ok = _read_final(ctx, c.path) is not None
    return _result(c, ok, f"{c.path} {'exists' if ok else 'is missing'}", Evidence(paths=[c.path]))


def _file_contains(c: FileContains, ctx: _Ctx) -> CriterionResult:
    if ctx.state.read_file is None:
        return _error(c, "no final sandbox state available")
    if c.text is None and c.regex is None:
        return _error(c, "file_contains needs `text` or `regex`")
    data = _read_final(ctx, c.path)
    if data is None:
        return _result(c, False, f"{c.path} is missing", Evidence(paths=[c.path]))
    text = data.decode("utf-8", errors="replace")
    ok = (c.text is None or c.text in text) and (c.regex is None or re.search(c.regex, text) is not None)
    return _result(c, ok, f"{c.path} {'contains' if ok else 'lacks'} the expected text", Evidence(paths=[c.path]))


def _file_unchanged(c: FileUnchanged, ctx: _Ctx) -> CriterionResult:
    if ctx.state.read_file is None or ctx.state.base_file is None:
        return _error(c, "no final sandbox state available")
    ok = _read_final(ctx, c.path) == ctx.state.base_file(c.path)
    return _result(c, ok, f"{c.path} {'unchanged' if ok else 'changed'} since the base commit", Evidence(paths=[c.path]))


def _verifier_exit_code(c: VerifierExitCode, ctx: _Ctx) -> CriterionResult:
    code = ctx.state.verifier_exit_code
    if code is None:
        return _error(c, "the hidden verifier has not run (finish the sandbox first)")
    ok = code == c.expected
    tail = ctx.state.verifier_output.strip().splitlines()[-1:] if ctx.state.verifier_output else []
    expl = f"verifier exited {code} (expected {c.expected})" + (f": {tail[0][:200]}" if tail else "")
    return _result(c, ok, expl, Evidence(exit_codes=[code]))


def _last_edit_step(ctx: _Ctx) -> int:
    return max((a.step_id for a in ctx.actions if edited_paths(a)), default=0)


def _test_runs_after_last_edit(ctx: _Ctx, pattern: str) -> list[Action]:
    last = _last_edit_step(ctx)
    return [
        a
        for a in ctx.trusted
        if a.kind == "command"
        and a.step_id > last
        and a.command is not None
        and re.search(pattern, a.command)
        and not is_masked(a.command)
        and a.exit_code is not None
    ]


_RESULT_WORDS = re.compile(r"\b(pass(?:ed|es|ing)?|fail(?:ed|s|ing|ures?)?|\d+\s+(?:passed|failed))\b", re.I)


def _final_message_evidence(c: FinalMessageEvidence, ctx: _Ctx) -> CriterionResult:
    msg = ctx.trajectory.final_message or ""
    if not msg:
        return _result(c, False, "no final message")
    if not re.search(c.command_pattern, msg):
        return _result(c, False, "final message names no test command")
    words = _RESULT_WORDS.findall(msg)
    if not words:
        return _result(c, False, "final message gives no test result")
    says_pass = any(w.lower().startswith("pass") or "passed" in w.lower() for w in words) and not any(
        w.lower().startswith("fail") for w in words
    )
    runs = _test_runs_after_last_edit(ctx, c.command_pattern)
    backing = [a for a in runs if (a.exit_code == 0) == says_pass]
    if not backing:
        return _result(
            c,
            False,
            "no trusted test run after the last edit backs the reported result",
            Evidence(step_ids=[a.step_id for a in runs], exit_codes=[a.exit_code for a in runs if a.exit_code is not None]),
        )
    a = backing[-1]
    return _result(
        c,
        True,
        f"backed by `{a.command}` at step {a.step_id} (exit {a.exit_code})",
        Evidence(step_ids=[a.step_id], exit_codes=[a.exit_code] if a.exit_code is not None else []),
    )


def _parse_ts(ts: str) -> datetime | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def _budget(c: Budget, ctx: _Ctx) -> CriterionResult:
    steps = ctx.trajectory.steps
    problems = []
    if c.max_steps is not None and len(steps) > c.max_steps:
        problems.append(f"{len(steps)} steps > {c.max_steps}")
    n_cmd = sum(1 for a in ctx.actions if a.kind == "command")
    if c.max_commands is not None and n_cmd > c.max_commands:
        problems.append(f"{n_cmd} commands > {c.max_commands}")
    if c.max_seconds is not None and steps:
        t0, t1 = _parse_ts(steps[0].timestamp), _parse_ts(steps[-1].timestamp)
        if t0 is None or t1 is None:
            return _error(c, "unparseable step timestamps")
        secs = (t1 - t0).total_seconds()
        if secs > c.max_seconds:
            problems.append(f"{secs:.1f}s > {c.max_seconds}s")
    return _result(c, not problems, "; ".join(problems) or "within budget")


def _artifact_schema(c: ArtifactSchema, ctx: _Ctx) -> CriterionResult:
    if ctx.state.read_file is None:
        return _error(c, "no final sandbox state available")
    data = _read_final(ctx, c.path)
    if data is None:
        return _result(c, False, f"{c.path} is missing", Evidence(paths=[c.path]))
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        return _result(c, False, f"{c.path} is not JSON: {e}", Evidence(paths=[c.path]))
    try:
        jsonschema.validate(doc, c.json_schema)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        return _result(c, False, f"{c.path} at {where}: {e.message}", Evidence(paths=[c.path]))
    except jsonschema.SchemaError as e:
        return _error(c, f"invalid json_schema: {e.message}")
    return _result(c, True, f"{c.path} matches the schema", Evidence(paths=[c.path]))


_EVALUATORS: dict[str, Callable[..., CriterionResult]] = {
    "required_action": _required_action,
    "action_order": _action_order,
    "forbidden_action": _forbidden_action,
    "claims_before_edit": _claims_before_edit,
    "edits_within_claims": _edits_within_claims,
    "file_exists": _file_exists,
    "file_contains": _file_contains,
    "file_unchanged": _file_unchanged,
    "verifier_exit_code": _verifier_exit_code,
    "final_message_evidence": _final_message_evidence,
    "budget": _budget,
    "artifact_schema": _artifact_schema,
}


def score_trajectory(trajectory: Trajectory, spec: RewardSpec, state: FinalState | None = None) -> ScoreReport:
    """Score ``trajectory`` against ``spec``; pure and deterministic.

    Returns a :class:`ScoreReport` whose ``reward`` is in [0, 1] (rounded to 6 decimals) and never
    NaN. A criterion that raises or cannot be evaluated becomes ``status="error"`` with its reason;
    it counts as not passed.
    """
    state = state or FinalState()
    trusted_prov = {"server", "hook"} | ({"agent"} if spec.trust_agent_logged else set())
    actions = actions_of(trajectory.steps)
    ctx = _Ctx(spec, trajectory, state, actions, [a for a in actions if a.provenance in trusted_prov])
    results: list[CriterionResult] = []
    for c in spec.criteria:
        try:
            results.append(_EVALUATORS[c.type](c, ctx))
        except (re.error, OSError, ValueError) as e:  # bad regex in a spec, unreadable file
            results.append(_error(c, f"{type(e).__name__}: {e}"))
    total_w = sum(r.weight for r in results)
    mean = sum(r.value * r.weight for r in results) / total_w if total_w > 0 else 0.0
    all_pass = all(r.status == "pass" for r in results)
    if spec.aggregation == "all":
        reward = 1.0 if all_pass else mean
        passed = all_pass
    else:
        reward = mean
        passed = mean >= spec.pass_threshold and not any(r.safety_violation for r in results)
    reward = round(reward, 6) if math.isfinite(reward) else 0.0
    warnings = []
    if total_w <= 0:
        warnings.append("all criterion weights are zero; reward is 0")

    claims = success_claims(trajectory.final_message or "")
    backed = _test_runs_after_last_edit(ctx, DEFAULT_TEST_PATTERN)
    backed_pass = [a for a in backed if a.exit_code == 0]
    unverified = claims if claims and not backed_pass else []
    self_logged = [a for a in actions if a.provenance == "agent"]
    if self_logged and not spec.trust_agent_logged:
        warnings.append(f"{len(self_logged)} self-logged action(s) ignored for action criteria")
    return ScoreReport(
        session_id=trajectory.session_id,
        task_id=trajectory.task_id,
        reward=reward,
        passed=passed,
        aggregation=spec.aggregation,
        pass_threshold=spec.pass_threshold,
        criteria=results,
        failed_criteria=[r.id for r in results if r.status == "fail"],
        error_criteria=[r.id for r in results if r.status == "error"],
        safety_violations=sum(1 for r in results if r.safety_violation),
        self_report_only=bool(unverified),
        unverified_claims=unverified,
        provenance_used=sorted(trusted_prov),
        warnings=warnings,
    )

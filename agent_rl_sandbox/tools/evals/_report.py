"""Eval reports over a set of scored trajectories: counts, rates, per-task groups, canonical JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pydantic_core import PydanticSerializationError

from agent_rl_sandbox.schemas.reward import EvalReport, GroupStats, InputProblem, ReportStats, ScoreReport
from agent_rl_sandbox.tools._gc import paused_gc
from agent_rl_sandbox.tools._jsonout import float_forms_differ

_ROUND = 6


def _r(x: float) -> float:
    return round(float(x), _ROUND) + 0.0  # + 0.0 turns -0.0 into 0.0


def reward_variance(rewards: list[float]) -> float:
    """Population variance (0 for fewer than two values)."""
    n = len(rewards)
    if n < 2:
        return 0.0
    mean = sum(rewards) / n
    return sum((r - mean) ** 2 for r in rewards) / n


def group_stats(scores: Iterable[ScoreReport]) -> list[GroupStats]:
    """Per task variant (``task_id``): attempts, pass rate, mean reward, variance, zero-variance flag.

    Trajectories without a task id are grouped under ``(none)``."""
    by: dict[str, list[ScoreReport]] = defaultdict(list)
    for s in scores:
        by[s.task_id or "(none)"].append(s)
    out = []
    for task_id in sorted(by):
        group = by[task_id]
        rewards = [s.reward for s in group]
        var = reward_variance(rewards)
        passed = sum(1 for s in group if s.passed)
        out.append(
            GroupStats(
                task_id=task_id,
                attempts=len(group),
                passed=passed,
                pass_rate=_r(passed / len(group)),
                mean_reward=_r(sum(rewards) / len(group)),
                reward_variance=_r(var),
                zero_variance=len(group) >= 2 and max(rewards) == min(rewards),
            )
        )
    return out


def behaviour_stats(scores: Iterable[ScoreReport]) -> dict[str, GroupStats]:
    """Per behaviour: attempts, pass rate, mean reward, variance (:func:`group_stats` over the
    behaviour instead of the task variant; each group's ``task_id`` holds the behaviour's name).
    Trajectories without a behaviour are grouped under ``(none)``; keys sorted."""
    regrouped = [s.model_copy(update={"task_id": s.behaviour or "(none)"}) for s in scores]
    return {g.task_id: g for g in group_stats(regrouped)}


def zero_variance_share(groups: list[GroupStats]) -> tuple[int, int, float]:
    """``(groups with >= 2 attempts, of which zero-variance, share)``; share 0 when no groups."""
    multi = [g for g in groups if g.attempts >= 2]
    zero = sum(1 for g in multi if g.zero_variance)
    return len(multi), zero, _r(zero / len(multi)) if multi else 0.0


def sort_scores(scores: Iterable[ScoreReport]) -> list[ScoreReport]:
    return sorted(scores, key=lambda s: (s.task_id or "", s.session_id))


def build_report(
    kind: str,
    source: str,
    scores: list[ScoreReport],
    *,
    problems: list[InputProblem] | None = None,
    warnings: list[str] | None = None,
    validated_unhooks: int = 0,
    keep_order: bool = False,
) -> EvalReport:
    """Aggregate scored trajectories into an :class:`EvalReport` (deterministic: trajectories are
    sorted by task and session id unless ``keep_order``). Never emits ``None`` or NaN."""
    problems = sorted(problems or [], key=lambda p: (p.source, p.where, p.message))
    scores = list(scores) if keep_order else sort_scores(scores)
    n = len(scores)
    passed = sum(1 for s in scores if s.passed)
    criteria_total = sum(len(s.criteria) for s in scores)
    unscorable = sum(len(s.error_criteria) for s in scores)
    denom = criteria_total + len(problems)
    groups = group_stats(scores)
    n_groups, n_zero, zshare = zero_variance_share(groups)
    stats = ReportStats(
        trajectories=n,
        passed=passed,
        failed=n - passed,
        pass_rate=_r(passed / n) if n else 0.0,
        mean_reward=_r(sum(s.reward for s in scores) / n) if n else 0.0,
        safety_violations=sum(s.safety_violations for s in scores),
        criteria_total=criteria_total,
        unscorable_criteria=unscorable,
        problems=len(problems),
        unscorable_share=_r((unscorable + len(problems)) / denom) if denom else 0.0,
        self_report_only=sum(1 for s in scores if s.self_report_only),
        loops=sum(1 for s in scores if s.loops),
        malformed_tool_calls=sum(s.malformed_tool_calls for s in scores),
        groups=n_groups,
        zero_variance_groups=n_zero,
        zero_variance_share=zshare,
        validated_unhooks=validated_unhooks,
    )
    notes = list(warnings or [])
    if n == 0:
        notes.append("no trajectories were scored")
    if n_zero:
        notes.append(
            f"{n_zero} of {n_groups} task group(s) have zero reward variance: group-relative RL learns nothing from them"
        )
    if unscorable:
        notes.append(f"{unscorable} criterion result(s) could not be scored (status error)")
    return EvalReport(
        kind=kind, source=source, stats=stats, by_task=groups, trajectories=scores, problems=problems, warnings=notes
    )


_TOP_OPTIONAL = (
    "gate",
    "agent",
    "rewardSpec",
    "summary",
    "rows",
    "trainingRows",
    "validatedUnhooks",
    "suggestedUnhooks",
)


def report_dict(report: EvalReport) -> dict:
    """The report as JSON-ready data: camelCase Port Daddy keys, absent ones dropped."""
    data = report.model_dump(mode="json", by_alias=True)
    for key in _TOP_OPTIONAL:
        if data.get(key) is None:
            data.pop(key, None)
    return data


def report_json(report: EvalReport) -> str:
    """Canonical JSON text of a report (sorted keys, 2-space indent, trailing newline): the same
    input gives the same bytes."""
    return report_json_bytes(report).decode("utf-8")


def report_json_bytes(report: EvalReport) -> bytes:
    """:func:`report_json` as UTF-8 bytes, byte for byte ``json.dumps(report_dict(report),
    sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\\n"``.

    Fast path (about 5x at 10k trajectories): pydantic's Rust JSON serialiser, read back and written
    sorted and indented by orjson, whose output is the json module's (same separators, escapes,
    sorted keys, shortest round-trip float digits) except for floats below 1e-4, which
    :func:`float_forms_differ` detects. Anything the fast path cannot write exactly (such a float,
    an integer beyond 64 bits, a lone surrogate, orjson not installed) is written by the json module."""
    orjson: Any
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; keep the exact slow path
        orjson = None
    if orjson is not None:
        try:
            with paused_gc():  # millions of fresh objects and no cycles: the collector only rescans them
                data = orjson.loads(report.model_dump_json(by_alias=True))
            for key in _TOP_OPTIONAL:
                if data.get(key) is None:
                    data.pop(key, None)
            out = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        except (ValueError, TypeError, PydanticSerializationError):
            out = None
        if out is not None and not float_forms_differ(out):
            return out + b"\n"
    text = json.dumps(report_dict(report), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8")

"""Structural rules every stored, imported and exported step obeys (pure functions).

ATIF ties an observation result to a call of the *same* step through ``source_call_id``; a step whose
calls repeat an id, or whose results answer a call the step does not have, cannot be paired and is
rejected everywhere: on logging, on import and (as a last check) on export.
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.schemas.trajectory import Step


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def step_problems(step: Step | dict[str, Any]) -> list[str]:
    """Problems with a step's tool calls and observation, as sentences; ``[]`` when it is sound.

    Checks: every ``tool_call_id`` is unique within the step; every observation result with a
    ``source_call_id`` names a call of the step.
    """
    problems: list[str] = []
    calls = _get(step, "tool_calls") or []
    ids: set[str] = set()
    for call in calls:
        cid = _get(call, "tool_call_id")
        if cid in ids:
            problems.append(f"duplicate tool_call_id {cid!r} in one step")
        ids.add(cid)
    obs = _get(step, "observation")
    for res in (_get(obs, "results") or []) if obs is not None else []:
        sid = _get(res, "source_call_id")
        if sid is not None and sid not in ids:
            problems.append(f"observation result points at call {sid!r}, which is not a tool call of this step")
    return problems


def unanswered_calls(step: Step) -> list[str]:
    """Ids of the step's tool calls that no observation result answers (a cancelled or lost call)."""
    answered = {r.source_call_id for r in (step.observation.results if step.observation else [])}
    return [c.tool_call_id for c in (step.tool_calls or []) if c.tool_call_id not in answered]

"""Structural rules every stored, imported and exported step obeys (pure functions).

The rules themselves are ATIF's pairing rules, defined once in
:func:`agent_rl_sandbox.tools.formats.atif.integrity_issues` (a step whose calls repeat an id, or whose
results answer a call the step does not have, cannot be paired); this module gives the store and the
converters their sentence form and the calls no result answers.
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools.formats.atif import integrity_issues


def step_problems(step: Step | dict[str, Any]) -> list[str]:
    """Problems with a step's tool calls and observation, as sentences; ``[]`` when it is sound
    (rules: :func:`~agent_rl_sandbox.tools.formats.atif.integrity_issues`)."""
    return [i.message for i in integrity_issues(step)]


def unanswered_calls(step: Step) -> list[str]:
    """Ids of the step's tool calls that no observation result answers (a cancelled or lost call)."""
    answered = {r.source_call_id for r in (step.observation.results if step.observation else [])}
    return [c.tool_call_id for c in (step.tool_calls or []) if c.tool_call_id not in answered]

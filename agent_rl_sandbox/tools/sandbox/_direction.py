"""Reward direction test: a task's known-good trajectory must score strictly above its known-bad one.

A reward whose sign is inverted (or whose criteria reward the wrong thing) is caught by playing the
task's ``solution/oracle.json`` and ``solution/known_bad.json`` through the real sandbox service
and comparing their scores. The training path calls :func:`require_direction` and refuses a task
that fails it; ``agent-rl-sandbox tasks check`` runs the same test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox._scripted import ScriptError, play_task_script

if TYPE_CHECKING:
    from agent_rl_sandbox.tools.sandbox._service import SandboxService


class DirectionError(ActionError):
    """The task's reward spec fails the direction test; it must not be used for training."""


@dataclass
class DirectionCheck:
    """Outcome of the direction test for one task. ``ok``: oracle passes, known-bad fails, and the
    oracle's reward is strictly above the known-bad one."""

    task_id: str
    ok: bool
    good_reward: float
    bad_reward: float
    good_passed: bool
    bad_passed: bool
    good_session_id: str | None = None
    bad_session_id: str | None = None
    problems: list[str] = field(default_factory=list)


def direction_check(sandbox: SandboxService, task_id: str) -> DirectionCheck:
    """Play the oracle and the known-bad script of ``task_id`` and compare their scores.

    Never raises for a bad task: problems (a missing script, a failed reset) are in ``problems``
    with ``ok`` false."""
    try:
        good_ep = play_task_script(sandbox, task_id, "oracle", agent="direction-oracle")
        bad_ep = play_task_script(sandbox, task_id, "known_bad", agent="direction-known_bad")
    except (ActionError, ScriptError, OSError, ValueError) as e:
        msg = e.agent_text() if isinstance(e, ActionError) else f"{type(e).__name__}: {e}"
        return DirectionCheck(task_id, False, 0.0, 0.0, False, False, problems=[msg])
    good, bad = good_ep.finish, bad_ep.finish
    problems = []
    if not good["passed"]:
        problems.append(f"oracle fails: {good['failed_criteria']}")
    if bad["passed"]:
        problems.append("known-bad passes")
    if not good["reward"] > bad["reward"]:
        problems.append(f"direction test: oracle reward {good['reward']} is not above known-bad reward {bad['reward']}")
    return DirectionCheck(
        task_id,
        not problems,
        good["reward"],
        bad["reward"],
        good["passed"],
        bad["passed"],
        good_ep.session_id,
        bad_ep.session_id,
        problems,
    )


def require_direction(sandbox: SandboxService, task_id: str) -> DirectionCheck:
    """:func:`direction_check`, raising :class:`DirectionError` when it fails (for the training path)."""
    result = direction_check(sandbox, task_id)
    if not result.ok:
        raise DirectionError(
            f"task {task_id} is refused for training: {'; '.join(result.problems)}",
            "fix the task's reward spec so its oracle scores strictly above its known-bad trajectory "
            "(`agent-rl-sandbox tasks check` shows both)",
        )
    return result

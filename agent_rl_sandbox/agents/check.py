"""``tasks check``: every task's oracle must pass and its known-bad script must fail.

This is also the reward direction test: the oracle must score strictly above the known-bad
trajectory, so a reward spec with an inverted sign is caught before it is used for training.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_rl_sandbox.agents.scripted import play_script, service_caller
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError


@dataclass
class CheckRow:
    task_id: str
    oracle_reward: float
    oracle_passed: bool
    bad_reward: float
    bad_passed: bool
    ok: bool
    problem: str


async def check_tasks(settings: Settings, task_ids: list[str] | None = None) -> list[CheckRow]:
    """Play oracle and known-bad scripts of each task in process; one :class:`CheckRow` per task."""
    from agent_rl_sandbox.tools.services import Services

    services = Services.build(settings)
    call = service_caller(services)
    rows = []
    for tid in task_ids or sorted(services.sandbox.tasks):
        try:
            task = services.sandbox.task(tid)
            good = await play_script(call, tid, *task.scripted("oracle"), agent="oracle")
            bad = await play_script(call, tid, *task.scripted("known_bad"), agent="known-bad")
        except (ActionError, RuntimeError) as e:
            rows.append(CheckRow(tid, 0.0, False, 0.0, False, False, str(e)))
            continue
        g, b = good.finish, bad.finish
        problems = []
        if not g["passed"]:
            problems.append(f"oracle fails: {g['failed_criteria']}")
        if b["passed"]:
            problems.append("known-bad passes")
        if not g["reward"] > b["reward"]:
            problems.append("direction test: oracle does not score above known-bad")
        rows.append(
            CheckRow(tid, g["reward"], g["passed"], b["reward"], b["passed"], not problems, "; ".join(problems))
        )
    return rows

"""The job state machine: which transitions exist and who may take them.

Every transition is one row of the append-only job event log (time, actor, from, to, reason).
Actors: ``agent`` (an MCP caller: only ``cancel`` of its own job), ``human`` (the CLI or the web
page: approve, reject, cancel), ``worker`` (claims and stage outcomes), ``system`` (expiry,
lease recovery). No MCP tool, nor any sequence of them, moves a job out of ``awaiting_approval``
except to ``cancelled``.
"""

from __future__ import annotations

from typing import Literal

from agent_rl_sandbox.schemas.jobs import FINAL_STATES, JobState

Actor = Literal["agent", "human", "worker", "system"]

TRANSITIONS: dict[tuple[str, str], frozenset[str]] = {
    ("awaiting_approval", "approved"): frozenset({"human"}),
    ("awaiting_approval", "rejected"): frozenset({"human"}),
    ("awaiting_approval", "expired"): frozenset({"system"}),
    ("awaiting_approval", "cancelled"): frozenset({"agent", "human"}),
    ("approved", "queued"): frozenset({"human", "system"}),
    ("approved", "cancelled"): frozenset({"agent", "human"}),
    ("queued", "running"): frozenset({"worker"}),
    ("queued", "failed"): frozenset({"worker"}),  # spec_changed at claim time
    ("queued", "cancelled"): frozenset({"agent", "human"}),
    ("running", "succeeded"): frozenset({"worker"}),
    ("running", "failed"): frozenset({"worker", "system"}),  # a stage failed; worker_lost
    ("running", "cancelled"): frozenset({"agent", "human", "worker"}),
    ("succeeded", "evaluating"): frozenset({"worker"}),
    ("succeeded", "failed"): frozenset({"system"}),  # worker_lost between succeeded and evaluating
    ("evaluating", "gate_passed"): frozenset({"worker"}),
    ("evaluating", "gate_failed"): frozenset({"worker"}),
    ("evaluating", "failed"): frozenset({"worker", "system"}),
    ("evaluating", "cancelled"): frozenset({"agent", "human", "worker"}),
}
"""``(from, to) -> actors allowed``. Anything not listed is refused."""


def allowed(src: JobState | str, dst: JobState | str, actor: Actor) -> bool:
    """Whether ``actor`` may move a job from ``src`` to ``dst``."""
    return actor in TRANSITIONS.get((src, dst), frozenset())


def is_final(state: str) -> bool:
    """No transition leaves a final state."""
    return state in FINAL_STATES

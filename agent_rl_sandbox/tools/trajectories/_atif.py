"""ATIF v1.5 documents from stored trajectories: the store's side of
:func:`agent_rl_sandbox.tools.formats.atif.write_document` (which defines the layout and the key names the
importer and the scorer read back). A trajectory recorded without the agent's tool schemas gets
declarations inferred from its calls (``agent.extra.tool_definitions_inferred``).
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.schemas.trajectory import Trajectory
from agent_rl_sandbox.tools.formats.atif import (
    RL_STEP_KEYS,
    RL_TRAJECTORY_KEYS,
    AtifIntegrityError,
    write_document,
)
from agent_rl_sandbox.tools.trajectories._convert import tool_declarations

ExportIntegrityError = AtifIntegrityError
"""Kept name: a stored step whose tool calls and observation do not pair up."""

__all__ = ["RL_STEP_KEYS", "RL_TRAJECTORY_KEYS", "ExportIntegrityError", "atif_document"]


def atif_document(traj: Trajectory, *, store_score: dict[str, Any] | None = None) -> dict[str, Any]:
    """The trajectory as one ATIF v1.5 document (tool declarations inferred when the agent recorded
    none; ``store_score``: the store's score report, see ``write_document``). Raises
    :class:`ExportIntegrityError` on a step with duplicate tool call ids or an observation pointing at a
    call the step lacks."""
    return write_document(traj, declare_tools=tool_declarations, store_score=store_score)

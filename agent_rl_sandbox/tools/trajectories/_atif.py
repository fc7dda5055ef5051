"""ATIF v1.5 documents from stored trajectories (and the key names the importer reads back).

A stored :class:`~agent_rl_sandbox.schemas.trajectory.Step` is ATIF plus RL fields; in a plain ATIF
document those fields travel in the step's ``extra`` under :data:`RL_STEP_KEYS`, and the trajectory's
task, split and score travel in the document's ``extra`` under :data:`RL_TRAJECTORY_KEYS`. A trajectory
recorded without the agent's tool schemas gets declarations inferred from its calls
(``agent.extra.tool_definitions_inferred``).
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.schemas.trajectory import ATIF_SCHEMA_VERSION, Trajectory
from agent_rl_sandbox.tools.trajectories._convert import tool_declarations
from agent_rl_sandbox.tools.trajectories._integrity import step_problems

RL_STEP_KEYS = ("provenance", "outcome", "exit_code", "state_ref", "reward", "done", "client_step_id")
RL_TRAJECTORY_KEYS = (
    "task_id", "behaviour", "split", "status", "reward", "passed", "self_report_only", "final_message",
    "parent_session_id", "origin", "external_id", "reward_components", "created_at", "finished_at",
)


class ExportIntegrityError(RuntimeError):
    """A stored step whose tool calls and observation do not pair up (cannot happen through the store's
    own writes; raised rather than ever writing such a step into an export)."""


def atif_document(traj: Trajectory) -> dict[str, Any]:
    """The trajectory as one ATIF v1.5 document. Raises :class:`ExportIntegrityError` on a step with
    duplicate tool call ids or an observation pointing at a call the step lacks."""
    steps = []
    totals: dict[str, float] = {}
    for s in traj.steps:
        problems = step_problems(s)
        if problems:
            raise ExportIntegrityError(f"{traj.session_id} step {s.step_id}: {'; '.join(problems)}")
        d: dict[str, Any] = {"step_id": s.step_id, "timestamp": s.timestamp, "source": s.source, "message": s.message}
        if s.tool_calls:
            d["tool_calls"] = [c.model_dump() for c in s.tool_calls]
        if s.observation is not None:
            d["observation"] = s.observation.model_dump()
        if s.metrics:
            d["metrics"] = s.metrics
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd"):
                v = s.metrics.get(k)
                if isinstance(v, int | float) and not isinstance(v, bool):
                    totals[f"total_{k}"] = totals.get(f"total_{k}", 0) + v
        extra = dict(s.extra)
        for k in RL_STEP_KEYS:
            v = getattr(s, k)
            if v is not None and v is not False:
                extra[k] = v
        d["extra"] = extra
        steps.append(d)
    agent = traj.agent.model_dump(exclude_none=True)
    if not agent.get("tool_definitions"):
        called: dict[str, list[dict[str, Any]]] = {}
        for s in traj.steps:
            for c in s.tool_calls or []:
                called.setdefault(c.function_name, []).append(c.arguments)
        if called:
            agent["tool_definitions"] = tool_declarations(traj, called)
            agent["extra"] = {**(agent.get("extra") or {}), "tool_definitions_inferred": True}
    doc: dict[str, Any] = {
        "schema_version": ATIF_SCHEMA_VERSION,
        "session_id": traj.session_id,
        "agent": agent,
        "steps": steps,
    }
    if totals:
        doc["final_metrics"] = totals
    summary = traj.model_dump()
    doc["extra"] = {k: summary[k] for k in RL_TRAJECTORY_KEYS if summary.get(k) not in (None, {}, [])}
    return doc

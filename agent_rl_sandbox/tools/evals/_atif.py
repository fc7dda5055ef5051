"""ATIF v1.x trajectories for scoring, read with the one ATIF reader (:mod:`agent_rl_sandbox.tools.formats.atif`).

Trust: the reader's rule. A document that is not a verified export of this store is **self-reported**:
every step counts as self-logged (``agent``) whatever its ``extra.provenance`` says (kept as
``extra.claimed_provenance``), so with a spec's default ``trust_agent_logged = false`` its actions do not
satisfy action, order or evidence criteria. A verified export keeps its steps' provenance. The RL fields
this project exports in ``extra`` (``outcome``, ``exit_code``, ``state_ref``) are read back either way
(they describe what the step says happened, and only trusted steps count).

Integrity: the same rules as ``import`` and ``validate``: a step with duplicate tool call ids or an
observation naming no call of its step, a bad ``source``, a step that is not an object, a missing
``session_id`` or an unsupported ``schema_version`` rejects the document with an
:class:`EvalInputError` naming the JSON path and the validator's finding code. Malformed tool calls (no
name, arguments that are not an object) become failed steps (``invalid_tool_call``, outcome ``error``):
they are what a model produced, and scoring them is the point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_rl_sandbox.schemas.trajectory import AgentInfo, Step, Trajectory
from agent_rl_sandbox.tools.evals._actions import FINISH_TOOLS, MALFORMED_TOOL
from agent_rl_sandbox.tools.evals._inputs import EvalInputError, parse_json, read_bytes, validation_message
from agent_rl_sandbox.tools.formats.atif import (
    OUTCOMES,
    AtifDocument,
    AtifStep,
    is_atif,
    read_document,
    step_provenance,
)

__all__ = ["is_atif", "load_atif_file", "trajectory_from_atif", "trajectory_from_document"]

MAX_ISSUES_SHOWN = 5


def _reject(label: str, doc: AtifDocument) -> EvalInputError:
    issues = doc.all_errors
    shown = "; ".join(f"{label}: {i}" for i in issues[:MAX_ISSUES_SHOWN])
    more = f" (+{len(issues) - MAX_ISSUES_SHOWN} more)" if len(issues) > MAX_ISSUES_SHOWN else ""
    return EvalInputError(shown + more, "fix the ATIF file (`agent-rl-sandbox validate FILE` lists every problem)")


def _step(s: AtifStep, pos: int, verified: bool) -> Step:
    extra = dict(s.extra)
    provenance = step_provenance(s, verified=verified)
    claimed = s.rl.get("provenance")
    if claimed is not None and claimed != provenance:
        extra["claimed_provenance"] = claimed
    if s.step_id != pos + 1:
        extra["atif_step_id"] = s.step_id
    calls: list[dict[str, Any]] = []
    failed: list[str] = [s.calls_problem] if s.calls_problem else []
    for c in s.calls:
        if c.problem:
            failed.append(c.problem)
            continue
        calls.append(
            {
                "tool_call_id": c.tool_call_id or f"call_{pos + 1}_{c.index}",
                "function_name": c.function_name,
                "arguments": c.arguments,
            }
        )
    results = [{"source_call_id": r.source_call_id, "content": r.content} for r in s.results]
    outcome = s.rl.get("outcome") if s.rl.get("outcome") in OUTCOMES else "ok"
    code = s.rl.get("exit_code")
    exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if failed:
        extra["malformed_tool_call"] = "; ".join(failed)
        calls.append({"tool_call_id": f"malformed_{pos + 1}", "function_name": MALFORMED_TOOL, "arguments": {}})
        results.append(
            {"source_call_id": f"malformed_{pos + 1}", "content": "error: malformed tool call: " + "; ".join(failed)}
        )
        outcome = "error"
    state_ref = s.rl.get("state_ref") if isinstance(s.rl.get("state_ref"), str) else None
    return Step(
        step_id=pos + 1,
        timestamp=s.timestamp or "",
        source=s.source,
        message=s.message,
        tool_calls=calls or None,
        observation={"results": results} if results else None,
        metrics=s.metrics,
        extra=extra,
        provenance=provenance,
        outcome=outcome,
        exit_code=exit_code,
        state_ref=state_ref,
    )


def _final_message(steps: list[Step]) -> str | None:
    for s in reversed(steps):
        if s.source != "agent":
            continue
        for tc in s.tool_calls or []:
            msg = tc.arguments.get("message")
            if tc.function_name in FINISH_TOOLS and isinstance(msg, str) and msg.strip():
                return msg
        if s.message.strip():
            return s.message
    return None


def trajectory_from_document(doc: AtifDocument, label: str, *, verified: bool = False) -> Trajectory:
    """A parsed ATIF document as a :class:`Trajectory` (trust and integrity rules in the module doc).

    Raises :class:`EvalInputError` naming ``label``, the JSON path and the finding code when the document
    breaks a rule."""
    if not doc.ok:
        raise _reject(label, doc)
    try:
        agent = AgentInfo.model_validate(doc.agent)
    except ValueError:
        agent = AgentInfo(name=str(doc.agent.get("name", "unknown")))
    try:
        steps = [_step(s, i, verified) for i, s in enumerate(doc.steps)]
    except ValidationError as e:  # a field of a step has the wrong type
        raise EvalInputError(validation_message(label, e), "fix the ATIF file") from None
    split = doc.text("split")
    return Trajectory(
        session_id=doc.session_id or "",
        agent=agent,
        task_id=doc.text("task_id"),
        behaviour=doc.text("behaviour"),
        split=split if split in ("train", "heldout") else None,
        status="finished",
        created_at=steps[0].timestamp if steps else "",
        step_count=len(steps),
        # A verified export carries the store's final message; any other file's is read from its steps.
        final_message=(doc.text("final_message") if verified else None) or _final_message(steps),
        steps=steps,
    )


def trajectory_from_atif(doc: Any, label: str, *, verified: bool = False) -> Trajectory:
    """Read a decoded ATIF value and convert it (see :func:`trajectory_from_document`); ``verified``:
    the caller checked that it is a verified export of this store. Raises :class:`EvalInputError`."""
    return trajectory_from_document(read_document(doc), label, verified=verified)


def load_atif_file(path: Path, label: str | None = None) -> Trajectory:
    """Read and convert one ATIF file as self-reported; raises :class:`EvalInputError` (file and JSON path)."""
    label = label or Path(path).name
    return trajectory_from_atif(parse_json(read_bytes(Path(path), label), label), label)

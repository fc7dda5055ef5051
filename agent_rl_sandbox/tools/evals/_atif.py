"""Import ATIF v1.x trajectories (Harbor's Agent Trajectory Interchange Format) for scoring.

Provenance: ATIF steps carry no provenance, so every imported action counts as **self-logged**
(``agent``) unless the step's ``extra.provenance`` says ``server`` or ``hook``. With a spec's
default ``trust_agent_logged = false``, imported actions therefore do not satisfy action, order or
evidence criteria; set ``trust_agent_logged = true`` in the spec to score agent logs you trust.
The RL fields this project exports in ``extra`` (``outcome``, ``exit_code``, ``state_ref``,
``files_changed``) are read back when present.

Malformed tool calls inside a file (no name, non-object arguments) become failed steps
(``invalid_tool_call``, outcome ``error``) instead of rejecting the file; a document that is not an
ATIF trajectory at all raises :class:`EvalInputError` naming the JSON path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_rl_sandbox.schemas.trajectory import AgentInfo, Step, Trajectory
from agent_rl_sandbox.tools.evals._actions import FINISH_TOOLS, MALFORMED_TOOL
from agent_rl_sandbox.tools.evals._inputs import EvalInputError, parse_json, read_bytes, validation_message

_OUTCOMES = ("ok", "error", "refused", "limit", "unknown")
_SOURCES = ("user", "agent", "system")


def is_atif(doc: Any) -> bool:
    """True when ``doc`` looks like an ATIF trajectory (``steps`` list plus ``schema_version`` or ``session_id``)."""
    return isinstance(doc, dict) and isinstance(doc.get("steps"), list) and ("schema_version" in doc or "session_id" in doc)


def _text(value: Any) -> str:
    """ATIF message/content: a string, or a list of content parts (``{"type": "text", "text": ...}``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for p in value:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "\n".join(parts)
    return json.dumps(value, sort_keys=True, default=str)


def _bad(label: str, where: str, msg: str) -> EvalInputError:
    return EvalInputError(f"{label}: {where}: {msg}", "fix the ATIF file (schema_version, session_id, steps[])")


def _step(raw: Any, pos: int, label: str) -> Step:
    where = f"$.steps[{pos}]"
    if not isinstance(raw, dict):
        raise _bad(label, where, f"expected an object, got {type(raw).__name__}")
    extra = raw.get("extra") if isinstance(raw.get("extra"), dict) else {}
    extra = dict(extra)
    prov = extra.get("provenance")
    provenance = prov if prov in ("server", "hook", "agent") else "agent"
    source = raw.get("source", "agent")
    if source not in _SOURCES:
        raise _bad(label, f"{where}.source", f"expected one of {list(_SOURCES)}, got {source!r}")
    if raw.get("step_id") != pos + 1:
        extra["atif_step_id"] = raw.get("step_id")
    calls: list[dict] = []
    failed: list[str] = []
    raw_calls = raw.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        failed.append(f"tool_calls is {type(raw_calls).__name__}, not a list")
        raw_calls = []
    for i, tc in enumerate(raw_calls or []):
        if not isinstance(tc, dict):
            failed.append(f"tool_calls[{i}] is {type(tc).__name__}, not an object")
            continue
        name, args = tc.get("function_name"), tc.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                failed.append(f"tool_calls[{i}].arguments is not valid JSON")
                continue
        if not isinstance(name, str) or not name:
            failed.append(f"tool_calls[{i}] has no function_name")
            continue
        if not isinstance(args, dict):
            failed.append(f"tool_calls[{i}].arguments is {type(args).__name__}, not an object")
            continue
        call_id = tc.get("tool_call_id") if isinstance(tc.get("tool_call_id"), str) else f"call_{pos + 1}_{i}"
        calls.append({"tool_call_id": call_id, "function_name": name, "arguments": args})
    results = []
    obs = raw.get("observation")
    if isinstance(obs, dict) and isinstance(obs.get("results"), list):
        for r in obs["results"]:
            if isinstance(r, dict):
                sid = r.get("source_call_id")
                results.append({"source_call_id": sid if isinstance(sid, str) else None, "content": _text(r.get("content"))})
    outcome = extra.get("outcome") if extra.get("outcome") in _OUTCOMES else "ok"
    exit_code = extra.get("exit_code") if isinstance(extra.get("exit_code"), int) and not isinstance(extra.get("exit_code"), bool) else None
    if failed:
        extra["malformed_tool_call"] = "; ".join(failed)
        calls.append({"tool_call_id": f"malformed_{pos + 1}", "function_name": MALFORMED_TOOL, "arguments": {}})
        results.append({"source_call_id": f"malformed_{pos + 1}", "content": "error: malformed tool call: " + "; ".join(failed)})
        outcome = "error"
    ts = raw.get("timestamp")
    state_ref = extra.get("state_ref") if isinstance(extra.get("state_ref"), str) else None
    metrics = raw.get("metrics") if isinstance(raw.get("metrics"), dict) else None
    return Step(
        step_id=pos + 1,
        timestamp=ts if isinstance(ts, str) else "",
        source=source,
        message=_text(raw.get("message")),
        tool_calls=calls or None,
        observation={"results": results} if results else None,
        metrics=metrics,
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


def trajectory_from_atif(doc: Any, label: str) -> Trajectory:
    """Convert a parsed ATIF document into a :class:`Trajectory` (provenance rule in the module doc).

    Raises :class:`EvalInputError` naming ``label`` and the JSON path when it is not ATIF."""
    if not isinstance(doc, dict):
        raise _bad(label, "$", f"expected an ATIF object, got {type(doc).__name__}")
    version = doc.get("schema_version")
    if version is not None and (not isinstance(version, str) or not version.startswith("ATIF-v1")):
        raise _bad(label, "$.schema_version", f"unsupported version {version!r} (expected ATIF-v1.x)")
    sid = doc.get("session_id")
    if not isinstance(sid, str) or not sid:
        raise _bad(label, "$.session_id", "missing or not a string")
    raw_steps = doc.get("steps")
    if not isinstance(raw_steps, list):
        raise _bad(label, "$.steps", "missing or not a list")
    agent_raw = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    try:
        agent = AgentInfo.model_validate(agent_raw)
    except ValueError:
        agent = AgentInfo(name=str(agent_raw.get("name", "unknown")))
    try:
        steps = [_step(s, i, label) for i, s in enumerate(raw_steps)]
    except ValidationError as e:  # a field of a step has the wrong type
        raise EvalInputError(validation_message(label, e), "fix the ATIF file") from None
    root_extra = doc.get("extra") if isinstance(doc.get("extra"), dict) else {}

    def _opt(key: str) -> str | None:
        v = root_extra.get(key)
        return v if isinstance(v, str) and v else None

    split = _opt("split")
    return Trajectory(
        session_id=sid,
        agent=agent,
        task_id=_opt("task_id"),
        behaviour=_opt("behaviour"),
        split=split if split in ("train", "heldout") else None,
        status="finished",
        created_at=steps[0].timestamp if steps else "",
        step_count=len(steps),
        final_message=_final_message(steps),
        steps=steps,
    )


def load_atif_file(path: Path, label: str | None = None) -> Trajectory:
    """Read and convert one ATIF file; raises :class:`EvalInputError` (file and JSON path)."""
    label = label or Path(path).name
    return trajectory_from_atif(parse_json(read_bytes(Path(path), label), label), label)

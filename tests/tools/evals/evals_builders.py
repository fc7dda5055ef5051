"""Builders for hand-made trajectories and final states used by the evals tests."""

from __future__ import annotations

from agent_rl_sandbox.schemas.trajectory import AgentInfo, Observation, ObservationResult, Step, ToolCall, Trajectory
from agent_rl_sandbox.tools.evals import FinalState


def step(
    i: int,
    tool: str | None = None,
    args: dict | None = None,
    *,
    provenance: str = "server",
    outcome: str = "ok",
    exit_code: int | None = None,
    output: str = "",
    files_changed: list[str] | None = None,
    ts: str | None = None,
    source: str = "agent",
    message: str = "",
) -> Step:
    calls = None
    obs = None
    if tool is not None:
        cid = f"c{i}"
        calls = [ToolCall(tool_call_id=cid, function_name=tool, arguments=args or {})]
        obs = Observation(results=[ObservationResult(source_call_id=cid, content=output)])
    extra = {}
    if files_changed is not None:
        extra["files_changed"] = files_changed
    if tool == "sandbox_exec" and args:
        extra["command"] = args.get("command")
    return Step(
        step_id=i,
        timestamp=ts or f"2026-11-29T12:00:{i:02d}.000000Z",
        source=source,
        message=message,
        tool_calls=calls,
        observation=obs,
        provenance=provenance,
        outcome=outcome,
        exit_code=exit_code,
        extra=extra,
    )


def traj(steps: list[Step], final: str | None = None, *, session_id: str = "traj_test", task_id: str | None = "t") -> Trajectory:
    return Trajectory(
        session_id=session_id,
        agent=AgentInfo(name="test"),
        task_id=task_id,
        status="finished",
        created_at="2026-11-29T12:00:00.000000Z",
        final_message=final,
        steps=steps,
        step_count=len(steps),
    )


def claim(i: int, *paths: str, provenance: str = "server", outcome: str = "ok") -> Step:
    return step(i, "sandbox_claim", {"paths": list(paths), "reason": ""}, provenance=provenance, outcome=outcome)


def write(i: int, path: str, content: str = "x = 1\n", *, provenance: str = "server") -> Step:
    return step(i, "sandbox_write_file", {"path": path, "content": content}, provenance=provenance, files_changed=[path])


def run(i: int, command: str, code: int | None = 0, *, provenance: str = "server", output: str = "", **kw) -> Step:
    outcome = kw.pop("outcome", "ok" if code in (0, None) else "error")
    return step(i, "sandbox_exec", {"command": command}, provenance=provenance, exit_code=code, outcome=outcome, output=output, **kw)


def good_steps() -> list[Step]:
    """Read, test (fails), claim, write, test (passes)."""
    return [
        step(1, "sandbox_read_file", {"path": "shopcart/pricing.py"}),
        run(2, "python -m pytest -q", 1, output="1 failed, 1 passed"),
        claim(3, "shopcart/pricing.py"),
        write(4, "shopcart/pricing.py"),
        run(5, "python -m pytest -q", 0, output="3 passed"),
    ]


GOOD_MESSAGE = "Fixed shopcart/pricing.py. Ran `python -m pytest -q` after the edit: 3 passed (exit 0)."


def state(files: dict[str, bytes], base: dict[str, bytes] | None = None, verifier: int | None = 0) -> FinalState:
    """A final state over in-memory files; changed paths are computed against ``base``."""
    base = base if base is not None else {}
    changed = tuple(sorted(p for p in set(files) | set(base) if files.get(p) != base.get(p)))
    return FinalState(
        read_file=files.get,
        base_file=base.get,
        changed_paths=changed,
        verifier_exit_code=verifier,
        verifier_output="",
    )

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


def traj(
    steps: list[Step], final: str | None = None, *, session_id: str = "traj_test", task_id: str | None = "t"
) -> Trajectory:
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
    return step(
        i, "sandbox_write_file", {"path": path, "content": content}, provenance=provenance, files_changed=[path]
    )


def run(i: int, command: str, code: int | None = 0, *, provenance: str = "server", output: str = "", **kw) -> Step:
    outcome = kw.pop("outcome", "ok" if code in (0, None) else "error")
    return step(
        i,
        "sandbox_exec",
        {"command": command},
        provenance=provenance,
        exit_code=code,
        outcome=outcome,
        output=output,
        **kw,
    )


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


class Episode:
    """One episode through the real sandbox service (no MCP), for reward-hacking tests."""

    def __init__(self, svc, task_id: str, *, agent: str = "hacker", pass_message: str = ""):
        from agent_rl_sandbox.schemas import tools as io

        self.io = io
        self.svc = svc
        self.pass_message = pass_message
        r = svc.sandbox.reset(io.SandboxResetInput(task_id=task_id, agent_name=agent))
        self.sid, self.session = r.sandbox_id, r.session_id

    def exec(self, command: str):
        return self.svc.sandbox.exec(self.io.SandboxExecInput(sandbox_id=self.sid, command=command))

    def write(self, path: str, content: str):
        return self.svc.sandbox.write_file(
            self.io.SandboxWriteFileInput(sandbox_id=self.sid, path=path, content=content)
        )

    def claim(self, *paths: str):
        return self.svc.sandbox.claim(self.io.SandboxClaimInput(sandbox_id=self.sid, paths=list(paths)))

    def finish(self, message: str | None = None):
        """Finish, re-score from the store, and check both agree; returns (finish output, criteria by id, report)."""
        io = self.io
        out = self.svc.sandbox.finish(io.SandboxFinishInput(sandbox_id=self.sid, message=message or self.pass_message))
        report = self.svc.sandbox.eval_score(io.EvalScoreInput(session_id=self.session)).report
        assert report.passed == out.passed and report.reward == out.reward
        return out, {c.id: c for c in report.criteria}, report

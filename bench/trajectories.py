"""Benchmark: logging steps through MCP (in process and over stdio) and bulk import, each against a
baseline measured in the same run.

- **In-process MCP** (``mcp.Client(server)``): ``trajectory_log_step`` with one step per call, against a
  no-op tool registered (here only) on the same server (the cost of the MCP call path itself; ``async``, as
  the SDK runs a plain function in a worker thread, a hop that cost 0.4-2.5 ms on the loaded VM), the calls
  interleaved A B A B so load changes hit both alike; prints each side's median latency and the
  ratio of the medians (the issue 16 goal: at most 1.3x).
  A second baseline, a typed no-op (``trajectory_log_step``'s input and output models, a fixed answer),
  separates what declaring those schemas costs (the SDK validates the step into its model; the client
  re-validates every structured result against the output schema with ``jsonschema``, which the plain
  no-op, declaring none, skips) from the tool's own work.
- **stdio MCP** (``agent-rl-sandbox serve``'s code in a subprocess): the same two calls over real stdio.
- **Bulk import**: ``import_file`` of a generated Codex rollout holding N steps, against appending the
  same records to a JSONL file (``json.dumps`` + write: the least a file-based recorder does).

Prints steps per second for each path and its baseline, and the ratio. The store is SQLite in a temp
folder unless ``--database-url`` is given (e.g. a scratch PostgreSQL database). Usage::

    .venv/bin/python bench/trajectories.py [--calls 500] [--import-steps 20000] [--database-url URL] [--mcp-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

from agent_rl_sandbox.schemas.tools import LoggedStepInput, LoggedStepRef, TrajectoryLogStepOutput
from agent_rl_sandbox.settings import Settings

NOOP_SERVER = textwrap.dedent(
    """
    from agent_rl_sandbox.server.stdio import serve_stdio

    def build():
        from agent_rl_sandbox.server.app import build_server
        server = build_server()

        @server.tool()
        async def noop(step: dict) -> dict:
            '''Baseline: accept a step-sized argument and return a small structured result.'''
            return {"ok": True}

        from agent_rl_sandbox.schemas.tools import LoggedStepInput, LoggedStepRef, TrajectoryLogStepOutput

        @server.tool()
        async def noop_typed(session_id: str, step: LoggedStepInput) -> TrajectoryLogStepOutput:
            '''Second baseline: trajectory_log_step's input and output schemas, no work.'''
            ref = LoggedStepRef(step_id=1, client_step_id=step.client_step_id, created=True)
            return TrajectoryLogStepOutput(session_id=session_id, steps=[ref], step_count=1)

        return server

    serve_stdio(build)
    """
)


def _step(i: int) -> dict:
    return {
        "message": f"ran the tests, attempt {i}",
        "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "shell", "arguments": {"command": "pytest -q"}}],
        "observation": {"results": [{"source_call_id": f"c{i}", "content": "4 passed in 0.05s"}]},
        "client_step_id": f"s{i}",
    }


def _report(label: str, n: int, seconds: float, base_n: int, base_seconds: float, base_label: str) -> None:
    rate, base = n / seconds, base_n / base_seconds
    print(f"{label:<34} {rate:>10,.0f} steps/s   baseline ({base_label}) {base:>10,.0f}/s   ratio {rate / base:6.2f}x")


def _latency_report(label: str, log: list[float], noop: list[float], typed: list[float]) -> None:
    a, b, c = statistics.median(log), statistics.median(noop), statistics.median(typed)
    print(
        f"{label:<34} median {a * 1000:6.2f} ms   no-op tool {b * 1000:6.2f} ms   ratio {a / b:5.2f}x"
        f"   ({len(log)} calls each, interleaved)\n"
        f"{'':<34} typed no-op (same input and output schemas) {c * 1000:6.2f} ms   ratio {a / c:5.2f}x;"
        f" the typed no-op is {c / b:5.2f}x the no-op"
    )


def _register_typed_noop(server) -> None:
    @server.tool()
    async def noop_typed(session_id: str, step: LoggedStepInput) -> TrajectoryLogStepOutput:
        """Second baseline: trajectory_log_step's input and output schemas, no work."""
        ref = LoggedStepRef(step_id=1, client_step_id=step.client_step_id, created=True)
        return TrajectoryLogStepOutput(session_id=session_id, steps=[ref], step_count=1)


async def _measure(client, calls: int, sid: str, offset: int) -> tuple[list[float], list[float], list[float]]:
    """``calls`` rounds, each a ``trajectory_log_step``, the no-op and the typed no-op with the same step:
    seconds per call of each."""
    log, noop, typed = [], [], []
    for i in range(calls):
        step = _step(offset + i)
        t = time.perf_counter()
        res = await client.call_tool("trajectory_log_step", {"session_id": sid, "step": step})
        log.append(time.perf_counter() - t)
        assert not res.is_error, res
        t = time.perf_counter()
        res = await client.call_tool("noop", {"step": step})
        noop.append(time.perf_counter() - t)
        assert not res.is_error, res
        t = time.perf_counter()
        res = await client.call_tool("noop_typed", {"session_id": sid, "step": step})
        typed.append(time.perf_counter() - t)
        assert not res.is_error, res
    return log, noop, typed


async def in_process(settings: Settings, calls: int) -> None:
    from mcp import Client

    from agent_rl_sandbox.server.app import build_server

    server = build_server(settings)

    @server.tool()
    async def noop(step: dict) -> dict:
        """Baseline: accept a step-sized argument and return a small structured result."""
        return {"ok": True}

    _register_typed_noop(server)
    async with Client(server) as client:
        sid = (await client.call_tool("trajectory_start", {"agent_name": "bench"})).structured_content["trajectory"][
            "session_id"
        ]
        await _measure(client, 20, sid, 10**6)  # warm up
        log, noop, typed = await _measure(client, calls, sid, 0)
    _latency_report("trajectory_log_step, in process", log, noop, typed)
    server.services.close()  # type: ignore[attr-defined]


async def over_stdio(settings: Settings, calls: int) -> None:
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONPATH")}
    env.update(AGENT_RL_SANDBOX_HOME=str(settings.home), AGENT_RL_SANDBOX_LOG_LEVEL="WARNING", HF_HUB_OFFLINE="1")
    if settings.database_url:
        env["AGENT_RL_SANDBOX_DATABASE_URL"] = settings.database_url
    params = StdioServerParameters(command=sys.executable, args=["-c", NOOP_SERVER], env=env)
    async with Client(params, read_timeout_seconds=60) as client:
        sid = (await client.call_tool("trajectory_start", {"agent_name": "bench-stdio"})).structured_content[
            "trajectory"
        ]["session_id"]
        await _measure(client, 20, sid, 10**6)
        log, noop, typed = await _measure(client, calls, sid, 0)
    _latency_report("trajectory_log_step, stdio", log, noop, typed)


def bulk_import(settings: Settings, steps: int, tmp: Path) -> None:
    from agent_rl_sandbox.tools.store import Store
    from agent_rl_sandbox.tools.trajectories import import_file

    lines = [
        json.dumps(
            {
                "timestamp": "2026-11-29T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": "bench-session", "cli_version": "0.65.0", "cwd": "/w"},
            }
        )
    ]
    records = []
    for i in range(steps):
        call = {
            "type": "function_call",
            "name": "shell",
            "call_id": f"call_{i}",
            "arguments": json.dumps({"command": ["bash", "-lc", f"pytest -q -k case{i}"]}),
        }
        out = {
            "type": "function_call_output",
            "call_id": f"call_{i}",
            "output": json.dumps(
                {"output": f"case{i}: 1 passed", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}
            ),
        }
        for p in (call, out):
            rec = {"timestamp": "2026-11-29T10:00:01Z", "type": "response_item", "payload": p}
            records.append(rec)
            lines.append(json.dumps(rec))
    src = tmp / "rollout-bench.jsonl"
    src.write_text("\n".join(lines) + "\n")
    store = Store(settings.db_url)
    t0 = time.perf_counter()
    report = import_file(store.trajectories, src)
    import_s = time.perf_counter() - t0
    assert report.ok and report.steps == steps, report.problems[:3]
    store.close()
    t0 = time.perf_counter()
    with open(tmp / "baseline.jsonl", "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())
    base_s = time.perf_counter() - t0
    _report("bulk import (Codex rollout)", steps, import_s, steps, base_s, "JSONL append")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=500, help="single-step calls per MCP path (default 500)")
    ap.add_argument("--import-steps", type=int, default=20_000, help="steps in the generated rollout (default 20000)")
    ap.add_argument("--database-url", default=None, help="store URL (default: SQLite in a temp folder)")
    ap.add_argument("--mcp-only", action="store_true", help="only the two log_step comparisons (no bulk import)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        settings = Settings(home=tmp / "home", database_url=args.database_url)
        settings.home.mkdir(parents=True)
        print(f"store: {settings.db_url}   load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        anyio.run(in_process, settings, args.calls)
        anyio.run(over_stdio, settings, args.calls)
        if not args.mcp_only:
            bulk_import(settings, args.import_steps, tmp)


if __name__ == "__main__":
    main()

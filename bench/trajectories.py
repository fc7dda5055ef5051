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
- With ``--compare-root DIR`` (another source tree, e.g. a ``git archive`` of the code before): the same
  rounds against that tree's own no-ops: over stdio on a server of its own (its own store), the two
  servers' rounds alternating, each first every other round; in process in a process of its own, in
  blocks of :data:`BLOCK` rounds alternating with this tree's (single calls interleaved across processes
  would put each of its calls right after a process switch, on cold caches). Within a round the three
  calls are rotated by the round's number (:func:`_measure`).
- **Bulk import** (the issue 16 goal: at least 0.3x): ``import_file`` of a generated ATIF document (and a
  Codex rollout) of N steps, against appending the same records to a JSONL file (``json.dumps`` + write +
  fsync: the least a file-based recorder does), interleaved A B A B over several rounds on one filesystem
  (printed), medians and their ratio.

Prints steps per second for each path and its baseline, and the ratio. The store is SQLite in a temp
folder unless ``--database-url`` is given (e.g. a scratch PostgreSQL database). Usage::

    .venv/bin/python bench/trajectories.py [--calls 500] [--import-steps 20000] [--import-rounds 5]
        [--import-formats atif,codex] [--compare-root DIR] [--database-url URL] [--mcp-only | --import-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

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

        get = server._tool_manager.get_tool
        get("noop_typed").fn_metadata.output_schema = get("trajectory_log_step").fn_metadata.output_schema
        return server

    serve_stdio(build)
    """
)


_OTHER_IN_PROCESS = textwrap.dedent(
    """
    import json, sys, tempfile, time
    from pathlib import Path
    import anyio
    from mcp import Client
    from agent_rl_sandbox.server.app import build_server
    from agent_rl_sandbox.settings import Settings
    from agent_rl_sandbox.schemas.tools import LoggedStepInput, LoggedStepRef, TrajectoryLogStepOutput

    def step_of(i):  # bench/trajectories.py's _step
        return {
            "message": f"ran the tests, attempt {i}",
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "shell", "arguments": {"command": "pytest -q"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": "4 passed in 0.05s"}]},
            "client_step_id": f"s{i}",
        }

    async def main(home):
        server = build_server(Settings(home=home))

        @server.tool()
        async def noop(step: dict) -> dict:
            return {"ok": True}

        @server.tool()
        async def noop_typed(session_id: str, step: LoggedStepInput) -> TrajectoryLogStepOutput:
            ref = LoggedStepRef(step_id=1, client_step_id=step.client_step_id, created=True)
            return TrajectoryLogStepOutput(session_id=session_id, steps=[ref], step_count=1)

        get = server._tool_manager.get_tool
        get("noop_typed").fn_metadata.output_schema = get("trajectory_log_step").fn_metadata.output_schema
        async with Client(server) as client:
            res = await client.call_tool("trajectory_start", {"agent_name": "bench-other"})
            sid = res.structured_content["trajectory"]["session_id"]
            for line in sys.stdin:
                offset, count = map(int, line.split())
                out = [[], [], []]
                for i in range(offset, offset + count):
                    step = step_of(i)
                    calls = [("trajectory_log_step", {"session_id": sid, "step": step}), ("noop", {"step": step}),
                             ("noop_typed", {"session_id": sid, "step": step})]
                    for j in range(3):  # rotated by the round's number, as bench/trajectories.py's own rounds
                        k = (i + j) % 3
                        name, args = calls[k]
                        t = time.perf_counter()
                        res = await client.call_tool(name, args)
                        out[k].append(time.perf_counter() - t)
                        assert not res.is_error, res
                print(json.dumps(out), flush=True)
        server.services.close()

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "home").mkdir()
        anyio.run(main, Path(d) / "home")
    """
)
"""The in-process rounds of :func:`_measure` in another source tree (``--compare-root``), its own server
with the same two no-ops: reads ``offset count`` per line, runs that block of rounds, answers the seconds
of each call as JSON ``[log_step, no-op, typed no-op]`` lists."""


class _OtherInProcess:
    """The other tree's in-process rounds, one block per :meth:`block` (the other process times its calls)."""

    def __init__(self, root: Path):
        env = dict(os.environ, PYTHONPATH=str(root.resolve()))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _OTHER_IN_PROCESS],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def block(self, offset: int, count: int) -> list[list[float]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{offset} {count}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the other tree's in-process bench stopped (see its stderr above)")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


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

    _same_output_schema(server)


def _same_output_schema(server) -> None:
    """Give the typed no-op the output schema ``trajectory_log_step`` lists (where this tree writes it
    leaner than pydantic does, ``server/_lean_schema.py``), so both cost the client the same to check."""
    get = server._tool_manager.get_tool
    get("noop_typed").fn_metadata.output_schema = get("trajectory_log_step").fn_metadata.output_schema


async def _round(client, sid: str, step: dict, i: int, into: tuple[list[float], list[float], list[float]]) -> None:
    """One round on one server: ``trajectory_log_step``, the no-op and the typed no-op with ``step``, in
    an order rotated by the round's number ``i`` (so each is first equally often); each call's seconds
    appended to its list of ``into``."""
    calls = (
        ("trajectory_log_step", {"session_id": sid, "step": step}),
        ("noop", {"step": step}),
        ("noop_typed", {"session_id": sid, "step": step}),
    )
    for k in range(3):
        j = (i + k) % 3
        name, args = calls[j]
        t = time.perf_counter()
        res = await client.call_tool(name, args)
        into[j].append(time.perf_counter() - t)
        assert not res.is_error, res


async def _measure(
    client, calls: int, sid: str, offset: int, peer: tuple[Any, str] | None = None
) -> tuple[list[float], ...]:
    """``calls`` rounds of :func:`_round` (and, with ``peer``, a ``(client, session id)`` of the other
    tree's server, the same round on it, the two servers' order alternating round by round): seconds per
    call, as lists ``(log_step, no-op, typed no-op)`` for this server, then the same three for the peer's.

    Both servers get the same pattern of calls, each first in its round equally often. In a fixed
    order, with the other tree's ``trajectory_log_step`` alone as a fourth call of each round, the
    comparison leaned 11-37% to one side whichever tree was on it (2026-12-01, load 7-12, the trees
    swapped): a call right after a switch of process, or on a server idle for longer, runs on colder
    caches; ``trajectory_log_step``, always called first, paid that against its no-ops."""
    mine: tuple[list[float], list[float], list[float]] = ([], [], [])
    theirs: tuple[list[float], list[float], list[float]] = ([], [], [])
    for i in range(calls):
        step = _step(offset + i)
        if peer is not None and (offset + i) % 2:
            await _round(peer[0], peer[1], step, offset + i, theirs)
        await _round(client, sid, step, offset + i, mine)
        if peer is not None and not (offset + i) % 2:
            await _round(peer[0], peer[1], step, offset + i, theirs)
    return (*mine, *theirs)


BLOCK = 20
"""Rounds per block when another tree runs in process: this tree's block, then the other's, alternating."""


async def in_process(settings: Settings, calls: int, compare_root: Path | None = None) -> None:
    from mcp import Client

    from agent_rl_sandbox.server.app import build_server

    server = build_server(settings)

    @server.tool()
    async def noop(step: dict) -> dict:
        """Baseline: accept a step-sized argument and return a small structured result."""
        return {"ok": True}

    _register_typed_noop(server)
    peer = _OtherInProcess(compare_root) if compare_root is not None else None
    try:
        async with Client(server) as client:
            sid = (await client.call_tool("trajectory_start", {"agent_name": "bench"})).structured_content[
                "trajectory"
            ]["session_id"]
            await _measure(client, 20, sid, 10**6)  # warm up
            if peer is None:
                log, noop_s, typed, *_ = await _measure(client, calls, sid, 0)
            else:
                # Each tree in its own process, in blocks (A B A B): both see the same pattern of calls
                # after a switch of process (the first call of a block runs on cold caches).
                peer.block(10**6, 20)
                log, noop_s, typed, theirs = [], [], [], [[], [], []]
                for start in range(0, calls, BLOCK):
                    n = min(BLOCK, calls - start)
                    a, b, c, *_ = await _measure(client, n, sid, start)
                    log, noop_s, typed = log + a, noop_s + b, typed + c
                    for mine, got in zip(theirs, peer.block(start, n), strict=True):
                        mine.extend(got)
    finally:
        if peer is not None:
            peer.close()
    _latency_report("trajectory_log_step, in process", log, noop_s, typed)
    if peer is not None:
        _latency_report(f"  the code in {compare_root}", *theirs)
        print(
            f"{'':<34} this code's log_step is {statistics.median(theirs[0]) / statistics.median(log):4.2f}x faster"
            f" ({BLOCK}-round blocks, each tree in its own process, interleaved)"
        )
    server.services.close()  # type: ignore[attr-defined]


def _fresh_home(settings: Settings, name: str) -> Path:
    """A new home folder beside ``settings.home`` (each server over stdio starts on an empty store, as
    the other tree's does: not on the one the in-process rounds filled)."""
    home = settings.home.parent / name
    home.mkdir(exist_ok=True)
    return home


def _stdio_params(settings: Settings, home: Path, pythonpath: str | None):
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONPATH")}
    env.update(AGENT_RL_SANDBOX_HOME=str(home), AGENT_RL_SANDBOX_LOG_LEVEL="WARNING", HF_HUB_OFFLINE="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    if settings.database_url:
        env["AGENT_RL_SANDBOX_DATABASE_URL"] = settings.database_url
    return StdioServerParameters(command=sys.executable, args=["-c", NOOP_SERVER], env=env)


async def over_stdio(settings: Settings, calls: int, compare_root: Path | None = None) -> None:
    from contextlib import AsyncExitStack

    from mcp import Client

    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client(_stdio_params(settings, _fresh_home(settings, "home-stdio"), None), read_timeout_seconds=60)
        )
        sid = (await client.call_tool("trajectory_start", {"agent_name": "bench-stdio"})).structured_content[
            "trajectory"
        ]["session_id"]
        peer = None
        if compare_root is not None:
            home = _fresh_home(settings, "home-other")
            peer_client = await stack.enter_async_context(
                Client(_stdio_params(settings, home, str(compare_root.resolve())), read_timeout_seconds=60)
            )
            peer_sid = (
                await peer_client.call_tool("trajectory_start", {"agent_name": "bench-other"})
            ).structured_content["trajectory"]["session_id"]
            peer = (peer_client, peer_sid)
        await _measure(client, 20, sid, 10**6, peer)  # warm up
        log, noop_s, typed, *theirs = await _measure(client, calls, sid, 0, peer)
    _latency_report("trajectory_log_step, stdio", log, noop_s, typed)
    if compare_root is not None:
        _latency_report(f"  the code in {compare_root}", *theirs)
        print(
            f"{'':<34} this code's log_step is {statistics.median(theirs[0]) / statistics.median(log):4.2f}x faster"
            " (each tree its own server and store, rounds alternating between them)"
        )


def _atif_document(steps: int, session: str) -> tuple[dict, list[dict]]:
    """An ATIF v1.5 document of ``steps`` steps (a user prompt, then agent steps each with one shell call,
    its result and metrics), and the records a file-based recorder would append for it (its steps)."""
    records: list[dict] = [{"step_id": 1, "source": "user", "message": "Fix the failing tests in tests/."}]
    for i in range(1, steps):
        records.append(
            {
                "step_id": i + 1,
                "timestamp": "2026-11-29T10:00:01Z",
                "source": "agent",
                "message": f"Running the tests for case {i}.",
                "tool_calls": [
                    {
                        "tool_call_id": f"call_{i}",
                        "function_name": "execute_bash",
                        "arguments": {"command": f"cd /workspace && python -m pytest -q tests/test_case{i}.py"},
                    }
                ],
                "observation": {
                    "results": [{"source_call_id": f"call_{i}", "content": f"case{i}: 1 passed in 0.05s\nexit 0"}]
                },
                "metrics": {"prompt_tokens": 1200 + i, "completion_tokens": 40, "cost_usd": 0.0031},
            }
        )
    doc = {
        "schema_version": "ATIF-v1.5",
        "session_id": session,
        "agent": {"name": "bench", "version": "1.0", "model_name": "bench-model"},
        "steps": records,
    }
    return doc, records


def _codex_rollout(steps: int, session: str) -> tuple[list[dict], list[dict]]:
    """A Codex rollout of ``steps`` tool steps (call + output lines), and those records."""
    meta = {
        "timestamp": "2026-11-29T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": session, "cli_version": "0.65.0", "cwd": "/w"},
    }
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
            records.append({"timestamp": "2026-11-29T10:00:01Z", "type": "response_item", "payload": p})
    return [meta, *records], records


def _filesystem(path: Path) -> str:
    """The filesystem type and mount point holding ``path`` (from /proc/mounts; "unknown" elsewhere)."""
    best = ("unknown", "")
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and str(path.resolve()).startswith(parts[1]) and len(parts[1]) > len(best[1]):
                    best = (parts[2], parts[1])
    except OSError:
        pass
    return f"{best[0]} ({best[1] or '?'})"


_OTHER_IMPORT = textwrap.dedent(
    """
    import sys, time
    from agent_rl_sandbox.tools.store import Store
    from agent_rl_sandbox.tools.trajectories import import_file
    store = Store(sys.argv[1])
    store.trajectories.redactor
    t0 = time.perf_counter()
    report = import_file(store.trajectories, sys.argv[2])
    print(time.perf_counter() - t0, report.steps)
    store.close()
    """
)
"""``import_file`` timed the same way in another source tree (``--compare-root``): prints seconds, steps."""


def bulk_import(
    settings: Settings, steps: int, tmp: Path, rounds: int, formats: list[str], compare_root: Path | None = None
) -> None:
    """``import_file`` of a generated file of ``steps`` steps against appending the same records to a JSONL
    file (``json.dumps`` + write + fsync), interleaved A B A B for ``rounds`` rounds, both in ``tmp`` (one
    filesystem). Each import goes to a fresh store (SQLite in ``tmp``; with ``--database-url`` the same
    database, a new session id each round), opened and with its redactor built before the clock starts
    (what a running server has; the CLI pays about 0.1 s once per process). With ``compare_root`` (another
    source tree, e.g. ``git archive`` of the code before) each round also times its ``import_file`` of the
    same file, in a subprocess, as a third interleaved side."""
    from agent_rl_sandbox.tools.store import Store
    from agent_rl_sandbox.tools.trajectories import import_file

    where = "files" if settings.database_url else "files and SQLite stores"
    print(f"bulk import: {steps:,} steps, {rounds} rounds interleaved; {where} on {_filesystem(tmp)}")
    for fmt in formats:
        imp_s, base_s, other_s = [], [], []
        for r in range(rounds):
            session = f"bench-{fmt}-{r}-{os.getpid()}"
            if fmt == "atif":
                doc, records = _atif_document(steps, session)
                text = json.dumps(doc)
            else:
                lines, records = _codex_rollout(steps, session)
                text = "".join(json.dumps(x) + "\n" for x in lines)
            src = tmp / f"import-{fmt}-{r}.json{'l' if fmt != 'atif' else ''}"
            src.write_text(text)
            url = settings.database_url or f"sqlite:///{tmp / f'import-{fmt}-{r}.db'}"
            store = Store(url)
            store.trajectories.redactor  # noqa: B018 - built before the clock, as in a running server
            try:
                t0 = time.perf_counter()
                report = import_file(store.trajectories, src)
                imp_s.append(time.perf_counter() - t0)
            finally:
                store.close()
            assert report.ok and report.steps == steps, report.problems[:3]
            t0 = time.perf_counter()
            with open(tmp / f"baseline-{fmt}-{r}.jsonl", "w", encoding="utf-8") as f:
                for rec in records:
                    f.write(json.dumps(rec) + "\n")
                f.flush()
                os.fsync(f.fileno())
            base_s.append(time.perf_counter() - t0)
            os.unlink(tmp / f"baseline-{fmt}-{r}.jsonl")
            if compare_root is not None:
                env = dict(os.environ, PYTHONPATH=str(compare_root.resolve()))
                other_url = settings.database_url or f"sqlite:///{tmp / f'other-{fmt}-{r}.db'}"
                if settings.database_url:  # the same database: the other side needs its own session id
                    src.write_text(text.replace(session, session + "-other"))
                out = subprocess.run(
                    [sys.executable, "-c", _OTHER_IMPORT, other_url, str(src)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=tmp,
                ).stdout.split()
                assert int(out[1]) == steps, out
                other_s.append(float(out[0]))
            os.unlink(src)
        a, b = statistics.median(imp_s), statistics.median(base_s)
        print(
            f"bulk import ({fmt}) median {steps / a:>9,.0f} steps/s ({a:.2f} s)   "
            f"JSONL append of the same records {steps / b:>9,.0f}/s ({b:.3f} s)   ratio {b / a:5.3f}x   "
            f"(rounds: {', '.join(f'{x:.2f}' for x in imp_s)} s vs {', '.join(f'{x:.3f}' for x in base_s)} s)"
        )
        if other_s:
            c = statistics.median(other_s)
            print(
                f"  the code in {compare_root} ({fmt}), interleaved: median {steps / c:>9,.0f} steps/s ({c:.2f} s), "
                f"ratio {b / c:5.3f}x the append; this code is {c / a:4.1f}x faster "
                f"(rounds: {', '.join(f'{x:.2f}' for x in other_s)} s)"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=500, help="single-step calls per MCP path (default 500)")
    ap.add_argument("--import-steps", type=int, default=20_000, help="steps in each generated file (default 20000)")
    ap.add_argument("--import-rounds", type=int, default=5, help="interleaved import/append rounds (default 5)")
    ap.add_argument(
        "--import-formats", default="atif,codex", help="comma-separated: atif, codex (default both; the goal is ATIF)"
    )
    ap.add_argument("--database-url", default=None, help="store URL (default: SQLite in a temp folder)")
    ap.add_argument("--mcp-only", action="store_true", help="only the two log_step comparisons (no bulk import)")
    ap.add_argument("--import-only", action="store_true", help="only the bulk import comparison")
    ap.add_argument(
        "--compare-root",
        type=Path,
        help="also time trajectory_log_step (in process and over stdio) and import_file from this source tree "
        "(e.g. a `git archive` of the code before), interleaved",
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        settings = Settings(home=tmp / "home", database_url=args.database_url)
        settings.home.mkdir(parents=True)
        print(f"store: {settings.db_url}   load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        if not args.import_only:
            anyio.run(in_process, settings, args.calls, args.compare_root)
            anyio.run(over_stdio, settings, args.calls, args.compare_root)
        if not args.mcp_only:
            formats = [f.strip() for f in args.import_formats.split(",") if f.strip()]
            bulk_import(settings, args.import_steps, tmp, args.import_rounds, formats, args.compare_root)
        print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

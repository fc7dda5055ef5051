"""Load test: two HTTP server processes on one PostgreSQL database, N concurrent agents.

Starts two ``agent-rl-sandbox serve --http`` processes (loopback, each with its own home folder, as on
two machines) on a throwaway PostgreSQL database, creates one identity per agent, and drives the
agents concurrently through the MCP SDK's real streamable-HTTP client with their bearer tokens. Each
agent:

1. ``sandbox_reset`` a task and runs ``--execs`` commands with ``sandbox_exec`` (on its own server:
   a sandbox's working copy lives on the machine that made it);
2. ``trajectory_start``, then ``--steps`` single-step ``trajectory_log_step`` calls, alternating
   between the two servers (the stateless transport lets any server answer), and
   ``trajectory_finish``;
3. ``sandbox_finish``.

Then it reads the database as the operator and asserts that every agent's trajectory holds exactly
its steps (no step lost, none duplicated: dense step ids, one per client step id) and that every
trajectory, step and sandbox carries the owner id of the identity that made it. Prints throughput
and p50/p99 latency per tool, against a baseline measured in the same run: an unauthenticated
``GET /healthz`` round trip (the HTTP floor of the same servers). Bounded: ``--timeout`` seconds in
all (default 600). Usage::

    .venv/bin/python bench/http_load.py [--agents 8] [--steps 500] [--execs 3] [--pg-admin URL]

``--pg-admin`` (default ``$AGENT_RL_SANDBOX_TEST_PG_ADMIN`` or
``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``) is a database the bench may connect to in
order to create and drop its own ``ars_bench_<hex>`` database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio

PG_ADMIN = os.environ.get("AGENT_RL_SANDBOX_TEST_PG_ADMIN", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
TASK = "claim-before-edit"
REPO = Path(__file__).resolve().parent.parent


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextlib.contextmanager
def scratch_database(admin: str, prefix: str = "ars_bench") -> Iterator[str]:
    """A fresh PostgreSQL database (URL) for the run, dropped afterwards."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_dsn(admin), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(_dsn(admin), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def servers(db_url: str, tmp: Path, count: int = 2, env_extra: dict[str, str] | None = None) -> Iterator[list[str]]:
    """``count`` ``serve --http`` processes on ``db_url`` (base URLs), stopped (SIGTERM) afterwards."""
    procs: list[subprocess.Popen] = []
    urls = []
    try:
        for i in range(count):
            port = _free_port()
            env = dict(os.environ)
            env.update(
                AGENT_RL_SANDBOX_HOME=str(tmp / f"server{i}"),
                AGENT_RL_SANDBOX_DATABASE_URL=db_url,
                AGENT_RL_SANDBOX_LOG_LEVEL="warning",
                HF_HUB_OFFLINE="1",
                PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
                **(env_extra or {}),
            )
            log = open(tmp / f"server{i}.log", "wb")  # noqa: SIM115 - closed with the process
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "agent_rl_sandbox.cli", "serve", "--http", "--port", str(port)],
                    env=env, stdout=log, stderr=subprocess.STDOUT,
                )
            )  # fmt: skip
            urls.append(f"http://127.0.0.1:{port}")
        import httpx2

        deadline = time.monotonic() + 60
        for url, proc in zip(urls, procs, strict=True):
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"server {url} exited with {proc.returncode}; see {tmp}/server*.log")
                with contextlib.suppress(httpx2.HTTPError):
                    if httpx2.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server {url} not healthy within 60 s; see {tmp}/server*.log")
                time.sleep(0.1)
        yield urls
    except BaseException:
        for i in range(len(procs)):  # the servers' side of a failure, before the folder goes
            tail = (tmp / f"server{i}.log").read_text(errors="replace")[-3000:]
            print(f"--- server{i}.log (tail) ---\n{tail}", file=sys.stderr)
        raise
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass
class Agent:
    name: str
    identity_id: str
    token: str
    home: int
    """Index of the server holding this agent's sandbox."""
    sandbox_id: str | None = None
    sandbox_session: str | None = None
    session_id: str | None = None


@dataclass
class Report:
    seconds: float
    calls: int
    steps: int
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    baseline: list[float] = field(default_factory=list)

    def lines(self) -> list[str]:
        def ms(xs: list[float], q: float) -> float:
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

        out = [
            f"{self.calls} tool calls in {self.seconds:.1f} s: {self.calls / self.seconds:,.0f} calls/s, "
            f"{self.steps / self.seconds:,.0f} logged steps/s",
            f"{'tool':<22} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8}",
        ]
        for tool, xs in sorted(self.latency.items()):
            out.append(f"{tool:<22} {len(xs):>6} {ms(xs, 0.5):>8.1f} {ms(xs, 0.99):>8.1f}")
        if self.baseline:
            b50 = ms(self.baseline, 0.5)
            p50 = statistics.median(self.latency["trajectory_log_step"]) * 1000
            out.append(f"baseline GET /healthz p50 {b50:.1f} ms; trajectory_log_step p50 / baseline = {p50 / b50:.1f}x")
        return out


def _step(agent: str, j: int) -> dict:
    return {
        "message": f"{agent} step {j}",
        "tool_calls": [{"tool_call_id": f"c{j}", "function_name": "shell", "arguments": {"command": "pytest -q"}}],
        "observation": {"results": [{"source_call_id": f"c{j}", "content": "4 passed"}]},
        "client_step_id": f"{agent}-{j}",
    }


async def _drive(agent: Agent, urls: list[str], steps: int, execs: int, report: Report) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for url in urls:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {agent.token}"}, timeout=120)
            )
            clients.append(
                await stack.enter_async_context(Client(streamable_http_client(f"{url}/mcp", http_client=http)))
            )

        async def call(server: int, tool: str, args: dict) -> dict:
            t = time.perf_counter()
            res = await clients[server].call_tool(tool, args)
            report.latency[tool].append(time.perf_counter() - t)
            report.calls += 1
            if res.is_error:
                raise AssertionError(f"{agent.name}: {tool} failed: {res.content[0].text if res.content else res}")
            return res.structured_content or {}

        home = agent.home
        out = await call(home, "sandbox_reset", {"task_id": TASK})
        agent.sandbox_id, agent.sandbox_session = out["sandbox_id"], out["session_id"]
        for k in range(execs):
            cmd = ["ls", "git status --short", f"python -c 'print({k} * 7)'"][k % 3]
            await call(home, "sandbox_exec", {"sandbox_id": agent.sandbox_id, "command": cmd})
        out = await call(home, "trajectory_start", {"agent_name": agent.name, "external_id": f"load-{agent.name}"})
        agent.session_id = out["trajectory"]["session_id"]
        for j in range(steps):
            await call(
                j % len(clients), "trajectory_log_step", {"session_id": agent.session_id, "step": _step(agent.name, j)}
            )
            report.steps += 1
        await call(home, "trajectory_finish", {"session_id": agent.session_id})
        await call(home, "sandbox_finish", {"sandbox_id": agent.sandbox_id, "message": "load test: done, no tests run"})


async def _baseline(urls: list[str], n: int, report: Report) -> None:
    import httpx2

    async with httpx2.AsyncClient() as http:
        for i in range(n):
            t = time.perf_counter()
            r = await http.get(f"{urls[i % len(urls)]}/healthz")
            report.baseline.append(time.perf_counter() - t)
            assert r.status_code == 200


def check_store(db_url: str, agents: list[Agent], steps: int) -> list[str]:
    """What the database holds, against what each agent did; returns the problems (empty: none)."""
    from sqlalchemy import select

    from agent_rl_sandbox.tools.store import Store
    from agent_rl_sandbox.tools.store._schema import sandboxes, trajectories
    from agent_rl_sandbox.tools.store._schema import steps as steps_t

    problems = []
    store = Store(db_url)
    try:
        with store.engine.connect() as conn:
            for a in agents:
                traj = (
                    conn.execute(select(trajectories).where(trajectories.c.session_id == a.session_id)).mappings().one()
                )
                rows = conn.execute(
                    select(steps_t.c.step_id, steps_t.c.client_step_id).where(steps_t.c.session_id == a.session_id)
                ).all()
                ids = sorted(r.step_id for r in rows)
                client_ids = [r.client_step_id for r in rows]
                want = {f"{a.name}-{j}" for j in range(steps)}
                if traj["owner"] != a.identity_id:
                    problems.append(f"{a.name}: trajectory owner {traj['owner']} != {a.identity_id}")
                if len(rows) != steps or traj["step_count"] != steps:
                    problems.append(
                        f"{a.name}: {len(rows)} steps stored (step_count {traj['step_count']}), {steps} logged"
                    )
                if set(client_ids) != want or len(client_ids) != len(set(client_ids)):
                    problems.append(f"{a.name}: client step ids lost or duplicated")
                if ids and ids != list(range(ids[0], ids[0] + len(ids))):
                    problems.append(f"{a.name}: step ids not dense: {ids[:5]}...")
                for sid in (a.sandbox_session,):
                    owner = conn.execute(select(trajectories.c.owner).where(trajectories.c.session_id == sid)).scalar()
                    if owner != a.identity_id:
                        problems.append(f"{a.name}: sandbox trajectory owner {owner} != {a.identity_id}")
                sbx = conn.execute(select(sandboxes).where(sandboxes.c.sandbox_id == a.sandbox_id)).mappings().one()
                if sbx["owner"] != a.identity_id or sbx["status"] != "finished":
                    problems.append(f"{a.name}: sandbox owner {sbx['owner']} status {sbx['status']}")
            owned = {
                r.owner: r.n
                for r in conn.execute(
                    select(trajectories.c.owner, trajectories.c.step_count.label("n")).where(
                        trajectories.c.owner.in_([a.identity_id for a in agents]),
                        trajectories.c.session_id.in_([a.session_id for a in agents]),
                    )
                )
            }
            if len(owned) != len(agents):
                problems.append(f"{len(owned)} identities own the logged trajectories, {len(agents)} expected")
    finally:
        store.close()
    return problems


def run_load(
    db_url: str, tmp: Path, agents: int = 8, steps: int = 500, execs: int = 3, timeout_s: float = 600,
    baseline_calls: int = 200,
) -> tuple[Report, list[str]]:  # fmt: skip
    """Run the whole load test on ``db_url`` (an empty database); returns the report and the problems."""
    from agent_rl_sandbox.tools.identities import IdentityRegistry
    from agent_rl_sandbox.tools.store import Store

    store = Store(db_url)  # migrate once, before both servers start
    reg = IdentityRegistry(store.engine)
    team: list[Agent] = []
    for i in range(agents):
        rec, token = reg.add(f"agent{i}")
        team.append(Agent(rec.name, rec.identity_id, token, home=i % 2))
    store.close()
    with servers(db_url, tmp) as urls:
        report = Report(seconds=0.0, calls=0, steps=0)

        async def main() -> None:
            with anyio.fail_after(timeout_s):
                await _baseline(urls, baseline_calls, report)
                t0 = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for a in team:
                        tg.start_soon(_drive, a, urls, steps, execs, report)
                report.seconds = time.perf_counter() - t0

        anyio.run(main)
    return report, check_store(db_url, team, steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--steps", type=int, default=500, help="single-step trajectory_log_step calls per agent")
    ap.add_argument("--execs", type=int, default=3, help="sandbox_exec calls per agent")
    ap.add_argument("--timeout", type=float, default=600, help="bound on the whole run (seconds)")
    ap.add_argument("--pg-admin", default=PG_ADMIN)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d, scratch_database(args.pg_admin) as db_url:
        print(f"2 servers, {args.agents} agents x ({args.execs} execs + {args.steps} steps), PostgreSQL")
        report, problems = run_load(db_url, Path(d), args.agents, args.steps, args.execs, args.timeout)
        print("\n".join(report.lines()))
        print(json.dumps({"problems": problems}))
        if problems:
            raise SystemExit(1)
        print(f"store check: {args.agents * args.steps} steps, none lost or duplicated, every one attributed")


if __name__ == "__main__":
    main()

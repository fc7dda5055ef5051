"""Benchmark: ``agent-rl-sandbox serve`` start to its first ``tools/list`` answer, against a minimal
one-tool MCP server written with the same SDK (``mcp`` 2.x ``MCPServer``), run the same way.

What a client (Claude Code, Codex) waits for before an agent can act is the whole server process:
the interpreter, the imports, building the server, the handshake and the tool list. This runs,
interleaved in one run (A B A B, so machine load hits both alike), ``--rounds`` rounds of:

- baseline: ``python MINIMAL.py``: an ``MCPServer`` with one typed tool, ``server.run()`` over
  stdio (the file is written to a temporary folder; its source is :data:`MINIMAL_SERVER`);
- serve: ``python -m agent_rl_sandbox.cli serve`` with a fresh home each round (no store file yet:
  the first start a user sees; ``--warm-home`` reuses one home for every round instead).

With ``--compare-root DIR`` (another checkout, e.g. ``git archive`` of an older commit) a third
side runs ``serve`` from that tree (``PYTHONPATH=DIR``) in the same rounds: before vs after.

Each round starts the process, sends ``initialize``, ``notifications/initialized`` and
``tools/list`` as raw JSON-RPC lines on stdin, and stops the clock when the ``tools/list`` answer
arrives on stdout (the time from ``Popen`` to that line). The process is then closed (stdin EOF)
and must exit 0. Prints the medians, p90, the ratio serve / baseline, the number of tools each
listed, and the load average before and after. Goal (issue 16): ratio <= 1.2. Usage::

    python bench/serve_start.py              # 20 rounds each
    python bench/serve_start.py --rounds 6   # quicker
    python bench/serve_start.py --compare-root /tmp/before   # and the code in /tmp/before
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MINIMAL_SERVER = '''\
"""A minimal one-tool MCP server (the SDK's own quick-start shape) over stdio."""
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="minimal")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


server.run()
'''

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def _send(proc: subprocess.Popen[bytes], msg: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], want_id: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise SystemExit(f"server closed stdout before answering id {want_id}; stderr:\n{err[-2000:]}")
        msg = json.loads(line)
        if msg.get("id") == want_id:
            return msg


def time_to_tools_list(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, int]:
    """Seconds from starting ``argv`` to its ``tools/list`` answer, and the number of tools listed.
    Run in a neutral folder (``python -m`` puts the working folder first on ``sys.path``, which would
    shadow ``PYTHONPATH``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    try:
        _send(proc, INITIALIZE)
        _answer(proc, 1)
        _send(proc, INITIALIZED)
        _send(proc, TOOLS_LIST)
        listed = _answer(proc, 2)
        dt = time.perf_counter() - t0
    finally:
        _, err = proc.communicate(timeout=60)  # closes stdin: the server's cue to exit
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}; stderr:\n{err.decode(errors='replace')[-2000:]}")
    return dt, len(listed["result"]["tools"])


def _p90(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, max(0, math.ceil(len(xs) * 0.9) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds of each (default 20)")
    ap.add_argument("--warm-home", action="store_true", help="reuse one home (store already created) for every round")
    ap.add_argument("--compare-root", type=Path, help="also time serve from this source tree (e.g. the code before)")
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-serve-start-") as tmp:
        minimal = Path(tmp) / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        serve = [sys.executable, "-m", "agent_rl_sandbox.cli", "serve"]
        base = [sys.executable, str(minimal)]
        # one untimed start of each: byte-code caches written, files in the page cache
        time_to_tools_list(base, env, tmp)
        time_to_tools_list(serve, dict(env, AGENT_RL_SANDBOX_HOME=str(Path(tmp) / "home-warmup")), tmp)
        other_env = None
        if args.compare_root is not None:
            other_env = dict(env, PYTHONPATH=str(args.compare_root.resolve()))
            time_to_tools_list(serve, dict(other_env, AGENT_RL_SANDBOX_HOME=str(Path(tmp) / "other-warmup")), tmp)
        a: list[float] = []
        b: list[float] = []
        c: list[float] = []
        n_tools = (0, 0, 0)
        for i in range(args.rounds):
            home = Path(tmp) / ("home" if args.warm_home else f"home-{i}")
            da, na = time_to_tools_list(base, env, tmp)
            db, nb = time_to_tools_list(serve, dict(env, AGENT_RL_SANDBOX_HOME=str(home)), tmp)
            a.append(da)
            b.append(db)
            nc = 0
            if other_env is not None:
                other_home = Path(tmp) / ("other-home" if args.warm_home else f"other-home-{i}")
                dc, nc = time_to_tools_list(serve, dict(other_env, AGENT_RL_SANDBOX_HOME=str(other_home)), tmp)
                c.append(dc)
            n_tools = (na, nb, nc)
    load_after = os.getloadavg()
    ma, mb = statistics.median(a), statistics.median(b)
    order = "A B C A B C" if c else "A B A B"
    print(f"rounds: {args.rounds} interleaved ({order}), home: {'reused' if args.warm_home else 'fresh per round'}")
    for label, xs in (
        (f"baseline  minimal MCPServer, {n_tools[0]} tool", a),
        (f"serve     agent-rl-sandbox, {n_tools[1]} tools", b),
    ):
        print(f"{label:38s} median {statistics.median(xs) * 1e3:7.1f} ms  p90 {_p90(xs) * 1e3:7.1f} ms")
    print(f"ratio serve / baseline (medians): {mb / ma:.2f}x  (goal <= 1.2x); extra {(mb - ma) * 1e3:.0f} ms")
    if c:
        mc = statistics.median(c)
        label = f"compare   {args.compare_root}, {n_tools[2]} tools"
        print(f"{label:38s} median {mc * 1e3:7.1f} ms  p90 {_p90(c) * 1e3:7.1f} ms")
        print(f"ratio compare / baseline (medians): {mc / ma:.2f}x; serve is {mc / mb:.2f}x faster than it")
    print("load average before: {:.2f} {:.2f} {:.2f}; after: {:.2f} {:.2f} {:.2f}".format(*load_before, *load_after))


if __name__ == "__main__":
    main()

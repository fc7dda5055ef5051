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
listed, and the load average before and after. ``--first-call`` also sends one ``tools/call``
after the list (serve: ``list_tasks``, which builds the store and tools on first use; baseline:
``add``) and prints when its answer came, counted from the start. Goal (issue 16): ratio <= 1.2. Usage::

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
ADD_CALL = {"name": "add", "arguments": {"a": 1, "b": 2}}
LIST_TASKS_CALL = {"name": "list_tasks", "arguments": {}}


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


def time_to_tools_list(
    argv: list[str], env: dict[str, str], cwd: str, call: dict | None = None
) -> tuple[float, int, float | None]:
    """Seconds from starting ``argv`` to its ``tools/list`` answer, the number of tools listed, and
    with ``call`` (``tools/call`` params) the seconds from the start to that call's answer, sent
    after the list. Run in a neutral folder (``python -m`` puts the working folder first on
    ``sys.path``, which would shadow ``PYTHONPATH``)."""
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
        dt_call = None
        if call is not None:
            _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
            answer = _answer(proc, 3)
            dt_call = time.perf_counter() - t0
            if "result" not in answer or answer["result"].get("isError"):
                raise SystemExit(f"{argv}: the first tool call failed: {answer}")
    finally:
        _, err = proc.communicate(timeout=60)  # closes stdin: the server's cue to exit
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}; stderr:\n{err.decode(errors='replace')[-2000:]}")
    return dt, len(listed["result"]["tools"]), dt_call


def _p90(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, max(0, math.ceil(len(xs) * 0.9) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds of each (default 20)")
    ap.add_argument("--warm-home", action="store_true", help="reuse one home (store already created) for every round")
    ap.add_argument("--compare-root", type=Path, help="also time serve from this source tree (e.g. the code before)")
    ap.add_argument(
        "--first-call",
        action="store_true",
        help="after the list, also time the first tool call (serve: list_tasks, which builds the services; "
        "baseline: add)",
    )
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-serve-start-") as tmp:
        minimal = Path(tmp) / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        serve = [sys.executable, "-m", "agent_rl_sandbox.cli", "serve"]
        # (label, argv, env, home prefix or None, the first call's params)
        sides: list[tuple[str, list[str], dict[str, str], str | None, dict]] = [
            ("baseline  minimal MCPServer", [sys.executable, str(minimal)], env, None, ADD_CALL),
            ("serve     agent-rl-sandbox", serve, env, "home", LIST_TASKS_CALL),
        ]
        if args.compare_root is not None:
            other = dict(env, PYTHONPATH=str(args.compare_root.resolve()))
            sides.append((f"compare   {args.compare_root}", serve, other, "other-home", LIST_TASKS_CALL))
        times: list[list[float]] = [[] for _ in sides]
        calls: list[list[float]] = [[] for _ in sides]
        n_tools = [0 for _ in sides]

        def run(k: int, home: str | None) -> None:
            label, argv, side_env, _, call = sides[k]
            if home is not None:
                side_env = dict(side_env, AGENT_RL_SANDBOX_HOME=str(Path(tmp) / home))
            dt, n_tools[k], dt_call = time_to_tools_list(argv, side_env, tmp, call if args.first_call else None)
            times[k].append(dt)
            if dt_call is not None:
                calls[k].append(dt_call)

        for k, side in enumerate(sides):  # one untimed start of each: byte-code written, files in the page cache
            run(k, None if side[3] is None else f"{side[3]}-warmup")
            times[k].clear()
            calls[k].clear()
        for i in range(args.rounds):
            for k, side in enumerate(sides):
                run(k, None if side[3] is None else (side[3] if args.warm_home else f"{side[3]}-{i}"))
    load_after = os.getloadavg()
    order = " ".join("ABC"[: len(sides)] * 2)
    print(f"rounds: {args.rounds} interleaved ({order}), home: {'reused' if args.warm_home else 'fresh per round'}")
    med = [statistics.median(xs) for xs in times]
    for k, side in enumerate(sides):
        label = f"{side[0]}, {n_tools[k]} tool{'s' if n_tools[k] != 1 else ''}"
        line = f"{label:38s} tools/list median {med[k] * 1e3:7.1f} ms  p90 {_p90(times[k]) * 1e3:7.1f} ms"
        if calls[k]:
            line += f"  | first call answered: median {statistics.median(calls[k]) * 1e3:7.1f} ms"
        print(line)
    print(
        f"ratio serve / baseline (medians): {med[1] / med[0]:.2f}x  (goal <= 1.2x); extra {(med[1] - med[0]) * 1e3:.0f} ms"
    )
    if len(sides) > 2:
        print(f"ratio compare / baseline (medians): {med[2] / med[0]:.2f}x; serve lists {med[2] / med[1]:.2f}x faster")
        if calls[1] and calls[2]:
            ratio = statistics.median(calls[1]) / statistics.median(calls[2])
            print(f"first tool call answered, serve / compare (medians): {ratio:.2f}x")
    print("load average before: {:.2f} {:.2f} {:.2f}; after: {:.2f} {:.2f} {:.2f}".format(*load_before, *load_after))


if __name__ == "__main__":
    main()

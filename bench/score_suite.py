"""Benchmark: ``agent-rl-sandbox score SUITE --json`` against Port Daddy's own Node harness.

Both sides score the same generated suite file (``bench/suite_gen.py``: 1k / 10k / 100k tasks by
default, and with ``--big-mb M`` one suite of at least M megabytes, run once per side)
as whole processes, interleaved A B A B in one run: this project's ``score FILE --json`` and
Port Daddy's ``trajectory_eval_harness.mjs --input FILE`` (``skills/agent-rl-sandbox-trainer/scripts``
of curiositech/port-daddy), each writing its JSON report to /dev/null. Prints, per size, the median
wall time, CPU time (user + system of the process and of the processes it waited for: ours scores
a large suite in two processes where it may use two CPUs, Node is one thread of JavaScript), peak
RSS (of the biggest process) and peak PSS of the process tree (its processes' proportional set
sizes summed, sampled every 20 ms: memory shared by ours' two processes counted once) of each side,
and the ratios (ours / Node's; below 1 is faster or smaller). ``--one-process`` adds ours with
``AGENT_RL_SANDBOX_SCORE_PROCESSES=1`` as a third side (set the variable to 2 for the two-process
path beside it). The machine's load average is printed with
them, since wall times on a shared machine move with it; CPU times much less.

The bench fetches nothing: point it at a local checkout of Port Daddy with ``--port-daddy DIR`` or
``PORT_DADDY_DIR=DIR``. Without one (or without ``node`` on PATH) it prints why and exits 0.

    PORT_DADDY_DIR=~/src/port-daddy python bench/score_suite.py
    python bench/score_suite.py --port-daddy DIR --sizes 1000,10000,100000 --repeats 3 --big-mb 250 --one-process
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_gen import write_suite  # noqa: E402

HARNESS = Path("skills/agent-rl-sandbox-trainer/scripts/trajectory_eval_harness.mjs")


def _tree_pss(pid: int) -> int:
    """PSS (KiB) of ``pid`` and its descendants now (``/proc``: ``smaps_rollup``, ``children``)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1])
                        break
            with open(f"/proc/{p}/task/{p}/children", "rb") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass  # gone meanwhile
    return total


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, int, int]:
    """``(wall s, cpu s, peak RSS KiB, exit status, peak tree PSS KiB)`` of one process (CPU
    including its waited-for children), stdout to /dev/null."""
    peak = [0]
    done = threading.Event()
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)

        def sample() -> None:
            while not done.wait(0.02):
                peak[0] = max(peak[0], _tree_pss(p.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(p.pid, 0)
        done.set()
    wall = time.perf_counter() - t0
    sampler.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.stderr is not None:
        err = p.stderr.read()
        p.stderr.close()
        if p.returncode not in (0, 1):
            sys.stderr.write(err.decode(errors="replace"))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, p.returncode, peak[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port-daddy", metavar="DIR", default=os.environ.get("PORT_DADDY_DIR"))
    ap.add_argument("--sizes", default="1000,10000,100000", help="task counts, comma-separated")
    ap.add_argument("--big-mb", type=float, default=0, help="also one suite of at least this many MB (once per side)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each side per size (interleaved)")
    ap.add_argument(
        "--one-process", action="store_true", help="also ours with AGENT_RL_SANDBOX_SCORE_PROCESSES=1 (a third side)"
    )
    args = ap.parse_args(argv)
    node = shutil.which("node")
    if not args.port_daddy:
        print("SKIP: no Port Daddy checkout: pass --port-daddy DIR or set PORT_DADDY_DIR (nothing is fetched)")
        return 0
    harness = Path(args.port_daddy).expanduser() / HARNESS
    if not harness.is_file():
        print(f"SKIP: {harness} not found: point --port-daddy at a checkout of curiositech/port-daddy")
        return 0
    if node is None:
        print("SKIP: node is not on PATH (Port Daddy's harness is a Node script)")
        return 0
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"baseline: Port Daddy {HARNESS} under node {node_version}; ours: {sys.executable} -m agent_rl_sandbox.cli")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    processes = os.environ.get("AGENT_RL_SANDBOX_SCORE_PROCESSES") or "unset (2 past 32 MiB where a second CPU is free)"
    print(f"ours: AGENT_RL_SANDBOX_SCORE_PROCESSES={processes}" + ("; ours-1p: 1" if args.one_process else ""))
    # An installed package has its bytecode compiled (pip does it); a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would compile every module on every run instead.
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("agent_rl_sandbox")  # the copy the measured processes import
    pkg = list(spec.submodule_search_locations or []) if spec else []
    if pkg:
        compileall.compile_dir(pkg[0], quiet=1)
        print(f"ours: {pkg[0]}, its bytecode compiled first, as an install has it")
    ours_env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
        ours_env.setdefault("AGENT_RL_SANDBOX_HOME", str(Path(tmp) / "home"))
        sizes = [(int(s), args.repeats) for s in args.sizes.split(",") if s]
        if args.big_mb:
            sizes.append((int(args.big_mb * 1e6 / 960) + 1, 1))  # about 960 bytes of suite per task
        for n, repeats in sizes:
            suite = Path(tmp) / f"suite-{n}.json"
            write_suite(str(suite), n)
            mb = suite.stat().st_size / 1e6
            ours_cmd = [sys.executable, "-m", "agent_rl_sandbox.cli", "score", str(suite), "--json"]
            node_cmd = [node, str(harness), "--input", str(suite)]
            sides = {"ours": (ours_cmd, ours_env), "node": (node_cmd, dict(os.environ))}
            if args.one_process:
                sides["ours-1p"] = (ours_cmd, {**ours_env, "AGENT_RL_SANDBOX_SCORE_PROCESSES": "1"})
            results: dict[str, list[tuple[float, float, int, int, int]]] = {side: [] for side in sides}
            for _ in range(repeats):  # A B A B: every side sees the same load
                for side, (cmd, env) in sides.items():
                    results[side].append(run(cmd, env))
            for side, res in results.items():
                bad = [r[3] for r in res if r[3] not in (0, 1)]
                if bad:
                    print(f"{side} failed on {n} tasks (exit {bad[0]})")
                    return 2
            med = {s: [statistics.median(r[i] for r in res) for i in (0, 1, 2, 4)] for s, res in results.items()}
            rows.append((n, mb, med))
            suite.unlink()
            d = med["node"]
            print(
                f"{n:>7} tasks ({mb:6.1f} MB): node wall {d[0]:6.2f} s  cpu {d[1]:6.2f} s  "
                f"rss {d[2] / 1024:6.0f} MiB  pss {d[3] / 1024:6.0f} MiB",
                flush=True,
            )
            for side in [s for s in sides if s != "node"]:
                o = med[side]
                print(
                    f"{'':>22}{side:>8} wall {o[0]:6.2f} s  cpu {o[1]:6.2f} s  rss {o[2] / 1024:6.0f} MiB  "
                    f"pss {o[3] / 1024:6.0f} MiB | ratio wall {o[0] / d[0]:5.2f}x  cpu {o[1] / d[1]:5.2f}x  "
                    f"rss {o[2] / d[2]:4.2f}x  pss {o[3] / max(d[3], 1):4.2f}x",
                    flush=True,
                )
    print(
        f"load average at end: {os.getloadavg()[0]:.1f}; medians of {args.repeats} interleaved runs per side"
        + (" (the big suite: one run per side)" if args.big_mb else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

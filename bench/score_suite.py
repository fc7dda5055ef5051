"""Benchmark: ``agent-rl-sandbox score SUITE --json`` against Port Daddy's own Node harness.

Both sides score the same generated suite file (``bench/suite_gen.py``: 1k / 10k / 100k tasks by
default, and with ``--big-mb M`` one suite of at least M megabytes, run once per side)
as whole processes, interleaved A B A B in one run: this project's ``score FILE --json`` and
Port Daddy's ``trajectory_eval_harness.mjs --input FILE`` (``skills/agent-rl-sandbox-trainer/scripts``
of curiositech/port-daddy), each writing its JSON report to /dev/null. Prints, per size, the median
wall time, CPU time (user + system of the process) and peak RSS of each side, and the ratios
(ours / Node's; below 1 is faster or smaller). The machine's load average is printed with them,
since wall times on a shared machine move with it; CPU times much less.

The bench fetches nothing: point it at a local checkout of Port Daddy with ``--port-daddy DIR`` or
``PORT_DADDY_DIR=DIR``. Without one (or without ``node`` on PATH) it prints why and exits 0.

    PORT_DADDY_DIR=~/src/port-daddy python bench/score_suite.py
    python bench/score_suite.py --port-daddy DIR --sizes 1000,10000,100000 --repeats 3 --big-mb 250
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_gen import write_suite  # noqa: E402

HARNESS = Path("skills/agent-rl-sandbox-trainer/scripts/trajectory_eval_harness.mjs")


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, int]:
    """``(wall s, cpu s, peak RSS KiB, exit status)`` of one process, stdout to /dev/null."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.stderr is not None:
        err = p.stderr.read()
        p.stderr.close()
        if p.returncode not in (0, 1):
            sys.stderr.write(err.decode(errors="replace"))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, p.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port-daddy", metavar="DIR", default=os.environ.get("PORT_DADDY_DIR"))
    ap.add_argument("--sizes", default="1000,10000,100000", help="task counts, comma-separated")
    ap.add_argument("--big-mb", type=float, default=0, help="also one suite of at least this many MB (once per side)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each side per size (interleaved)")
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
            results: dict[str, list[tuple[float, float, int, int]]] = {"ours": [], "node": []}
            for _ in range(repeats):  # A B A B: both sides see the same load
                results["ours"].append(run(ours_cmd, ours_env))
                results["node"].append(run(node_cmd, dict(os.environ)))
            for side, res in results.items():
                bad = [r[3] for r in res if r[3] not in (0, 1)]
                if bad:
                    print(f"{side} failed on {n} tasks (exit {bad[0]})")
                    return 2
            med = {s: [statistics.median(r[i] for r in res) for i in range(3)] for s, res in results.items()}
            rows.append((n, mb, med))
            suite.unlink()
            o, d = med["ours"], med["node"]
            print(
                f"{n:>7} tasks ({mb:6.1f} MB): ours wall {o[0]:7.2f} s  cpu {o[1]:7.2f} s  rss {o[2] / 1024:7.0f} MiB | "
                f"node wall {d[0]:6.2f} s  cpu {d[1]:6.2f} s  rss {d[2] / 1024:6.0f} MiB | "
                f"ratio wall {o[0] / d[0]:5.2f}x  cpu {o[1] / d[1]:5.2f}x  rss {o[2] / d[2]:4.2f}x",
                flush=True,
            )
    print(
        f"load average at end: {os.getloadavg()[0]:.1f}; medians of {args.repeats} interleaved runs per side"
        + (" (the big suite: one run per side)" if args.big_mb else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: new sandbox and reset vs ``shutil.copytree`` of the fixture, on the same filesystem.

For each filesystem (tmpfs ``/dev/shm`` and the disk under ``/var/tmp`` by default), a generated
5,000-file fixture and the server's home live on it, and each round runs, interleaved:

- ``new``: ``sandbox_reset`` with a task id (a new sandbox: the whole tool call, store included);
- ``copy``: ``shutil.copytree`` of the fixture repo on the same filesystem (the baseline: what a
  copy-per-episode sandbox does), then its removal (untimed);
- ``reset``: 4 files edited with ``sandbox_write_file``, then ``sandbox_reset`` of that sandbox
  (the whole tool call), and the working-copy part of it alone (the overlay remount or the copy's
  restore; the rest is the store: closing the old trajectory, starting a new one). The old
  layers' teardown, on a background thread after the call answers, is waited for untimed
  before the next step, so it runs into no timing.

The first ``new`` builds the task's cached base and is reported apart (once per fixture content).
Prints medians, p90 and the ratios to the copy's median, and which working copy was in force.

    .venv/bin/python bench/sandbox_cow.py [--rounds 30] [--files 5000] [--fs /dev/shm,/var/tmp]
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

from sandbox_reset import make_big_task  # noqa: E402

from agent_rl_sandbox.schemas.tools import SandboxResetInput, SandboxWriteFileInput  # noqa: E402
from agent_rl_sandbox.services import Services  # noqa: E402
from agent_rl_sandbox.settings import Settings  # noqa: E402

try:
    from agent_rl_sandbox.tools.sandbox._overlay import wait_reaped
except ImportError:  # the code before issue 16
    wait_reaped = None  # type: ignore[assignment]


def fs_type(path: Path) -> str:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() or "?"


def p90(values: list[float]) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]


def one_fs(where: Path, rounds: int, files: int, working_copy: str) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="ars-cow-", dir=where))
    try:
        make_big_task(tmp / "tasks" / "big", files)
        fixture = tmp / "tasks" / "big" / "repo"
        extra = {"working_copy": working_copy} if "working_copy" in Settings.model_fields else {}  # older checkouts
        services = Services.build(Settings(home=tmp / "home", task_dirs=(tmp / "tasks",), **extra))
        sb = services.sandbox
        timed: dict[str, list[float]] = {"new": [], "copy": [], "reset": [], "reset_wc": []}
        part: list[float] = []
        restore = getattr(sb, "_restore_working_copy", None)  # absent before issue 16: not split out

        def working_copy_part(*a, **k):  # the working-copy part of a reset (overlay or copy)
            t = time.perf_counter()
            try:
                return restore(*a, **k)  # type: ignore[misc]
            finally:
                part.append((time.perf_counter() - t) * 1000)

        if restore is not None:
            sb._restore_working_copy = working_copy_part  # type: ignore[method-assign]
        try:
            t0 = time.perf_counter()
            first = sb.reset(SandboxResetInput(task_id="bench/big", agent_name="bench"))
            build_ms = (time.perf_counter() - t0) * 1000
            sid = first.sandbox_id
            edits = [f for f in first.files if f.endswith(".py")][:4]
            for r in range(rounds):
                t0 = time.perf_counter()
                new = sb.reset(SandboxResetInput(task_id="bench/big", agent_name="bench"))
                timed["new"].append((time.perf_counter() - t0) * 1000)
                assert new.tree_hash == first.tree_hash
                dst = tmp / f"copy-{r}"
                t0 = time.perf_counter()
                shutil.copytree(fixture, dst, symlinks=True)
                timed["copy"].append((time.perf_counter() - t0) * 1000)
                shutil.rmtree(dst)
                for f in edits:
                    sb.write_file(SandboxWriteFileInput(sandbox_id=sid, path=f, content=f"# round {r}\n"))
                part.clear()
                t0 = time.perf_counter()
                out = sb.reset(SandboxResetInput(task_id="bench/big", sandbox_id=sid, agent_name="bench"))
                timed["reset"].append((time.perf_counter() - t0) * 1000)
                if part:
                    timed["reset_wc"].append(sum(part))
                assert out.tree_hash == first.tree_hash
                if wait_reaped is not None:  # the old layers' background teardown: not into the next timing
                    wait_reaped()
            kind = getattr(sb, "working_copy", ("copy", "the code before issue 16: copy, git add, commit"))
        finally:
            sb.close()
            services.close()
        return {"fs": f"{where} ({fs_type(where)})", "kind": kind, "build_ms": build_ms, **timed}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--fs", default="/dev/shm,/var/tmp", help="comma-separated folders, one per filesystem")
    ap.add_argument("--working-copy", default="auto", choices=["auto", "overlay", "copy"])
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.files} files, {args.rounds} interleaved rounds")
    for where in args.fs.split(","):
        r = one_fs(Path(where), args.rounds, args.files, args.working_copy)
        copy = statistics.median(r["copy"])
        print(f"\n{r['fs']}: working copy {r['kind'][0]} ({r['kind'][1]})")
        print(f"  first sandbox (builds the cached base once): {r['build_ms']:.1f} ms")
        print(f"  {'':<34}{'median ms':>10}{'p90 ms':>9}{'/ copy':>9}")
        for name, label in (
            ("copy", "copytree of the fixture (baseline)"),
            ("new", "new sandbox (whole sandbox_reset)"),
            ("reset", "reset after 4 edits (whole call)"),
            ("reset_wc", "  of which the working copy"),
        ):
            if not r[name]:
                continue
            med = statistics.median(r[name])
            print(f"  {label:<34}{med:>10.2f}{p90(r[name]):>9.2f}{med / copy:>8.3f}x")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

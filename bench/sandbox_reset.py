"""Benchmark: `sandbox_reset` of an existing sandbox vs a plain full-tree copy, measured in one run.

For a built-in task and for a generated 5,000-file fixture, each round changes a few files through
the sandbox tools (as an agent would), then resets the sandbox to its base commit; the baseline
copies the whole fixture with ``shutil.copytree`` (what a copy-per-episode sandbox would do). Prints
p50/p95 of both and their ratio, then reset time against the number of changed files on the big
fixture (reset work should follow the change, not the fixture size).

    .venv/bin/python bench/sandbox_reset.py [--rounds 20] [--files 5000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agent_rl_sandbox.schemas.tools import SandboxExecInput, SandboxResetInput, SandboxWriteFileInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def make_big_task(root: Path, n_files: int) -> Path:
    """A user task whose repo holds ``n_files`` small Python files in 100 packages."""
    repo = root / "repo"
    per_dir = max(1, n_files // 100)
    for i in range(n_files):
        d = repo / f"pkg{i // per_dir:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(f'"""Module {i}."""\n\n\ndef value_{i}() -> int:\n    return {i}\n')
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("#!/usr/bin/env bash\nexit 0\n")
    (root / "instruction.md").write_text("# Big fixture\n")
    (root / "task.toml").write_text(
        'id = "bench/big"\nbehaviour = "bench"\n[reward]\n[[reward.criteria]]\nid = "v"\ntype = "verifier_exit_code"\n'
    )
    return root


def bench_task(services: Services, task_id: str, rounds: int, scratch: Path, changes: int = 3) -> dict:
    sb = services.sandbox
    task = sb.task(task_id)
    t0 = time.perf_counter()
    first = sb.reset(SandboxResetInput(task_id=task_id, agent_name="bench"))
    create_ms = (time.perf_counter() - t0) * 1000
    sid = first.sandbox_id
    files = [f for f in first.files if f.endswith(".py")][:changes] or first.files[:changes]
    resets, copies = [], []
    for r in range(rounds):
        for f in files:
            sb.write_file(SandboxWriteFileInput(sandbox_id=sid, path=f, content=f"# round {r}\n"))
        sb.exec(SandboxExecInput(sandbox_id=sid, command=f"echo {r} > new_file_{r}.txt"))
        t0 = time.perf_counter()
        out = sb.reset(SandboxResetInput(task_id=task_id, sandbox_id=sid, agent_name="bench"))
        resets.append((time.perf_counter() - t0) * 1000)
        assert out.tree_hash == first.tree_hash
        dst = scratch / f"copy-{task_id.replace('/', '_')}-{r}"
        t0 = time.perf_counter()
        shutil.copytree(task.repo_dir, dst, symlinks=True)
        copies.append((time.perf_counter() - t0) * 1000)
        shutil.rmtree(dst)
    return {"task": task_id, "files": first.file_count, "create_ms": create_ms, "reset": resets, "copy": copies}


def scaling(services: Services, task_id: str, sizes: list[int], rounds: int = 5) -> list[tuple[int, float]]:
    sb = services.sandbox
    first = sb.reset(SandboxResetInput(task_id=task_id, agent_name="bench"))
    sid = first.sandbox_id
    out = []
    for n in sizes:
        times = []
        for r in range(rounds):
            sb.exec(
                SandboxExecInput(
                    sandbox_id=sid,
                    command=f"for f in $(find pkg* -name '*.py' | sort | head -n {n}); do echo '# {r}' >> $f; done",
                )
            )
            t0 = time.perf_counter()
            sb.reset(SandboxResetInput(task_id=task_id, sandbox_id=sid, agent_name="bench"))
            times.append((time.perf_counter() - t0) * 1000)
        out.append((n, statistics.median(times)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--task", default="claim-before-edit")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ars-bench-") as tmp:
        tmp = Path(tmp)
        make_big_task(tmp / "tasks" / "big", args.files)
        scratch = tmp / "scratch"
        scratch.mkdir()
        services = Services.build(Settings(home=tmp / "home", task_dirs=(tmp / "tasks",)))
        try:
            print(f"isolation: {services.sandbox.isolation.detail}")
            print(f"working copy: {getattr(services.sandbox, 'working_copy', ('copy', ''))[0]}")
            rows = [
                bench_task(services, args.task, args.rounds, scratch),
                bench_task(services, "bench/big", args.rounds, scratch),
            ]
            print(
                f"\n{'fixture':<24}{'files':>7}{'create ms':>11}{'reset p50':>11}{'reset p95':>11}"
                f"{'copy p50':>10}{'copy p95':>10}{'copy/reset':>12}"
            )
            for r in rows:
                rp50, rp95 = pct(r["reset"], 0.5), pct(r["reset"], 0.95)
                cp50, cp95 = pct(r["copy"], 0.5), pct(r["copy"], 0.95)
                print(
                    f"{r['task']:<24}{r['files']:>7}{r['create_ms']:>11.1f}{rp50:>11.1f}{rp95:>11.1f}"
                    f"{cp50:>10.1f}{cp95:>10.1f}{cp50 / rp50:>11.1f}x"
                )
            print(
                "\n(reset = the whole sandbox_reset tool call after 3 edited files and 1 new file: the working copy's "
                "restore (an overlay remount, or git restore and ownership fix-up on a copy), a new trajectory in the "
                "store; copy = shutil.copytree of the fixture repo, in a temporary folder: for the same filesystem "
                "on both sides see bench/sandbox_cow.py)"
            )
            print(f"\nreset p50 vs files changed on the {args.files}-file fixture:")
            for n, ms in scaling(services, "bench/big", [1, 10, 100, 1000]):
                print(f"  {n:>5} changed: {ms:8.1f} ms")
        finally:
            services.sandbox.close()
            services.close()


if __name__ == "__main__":
    main()

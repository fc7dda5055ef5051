"""Benchmark: `sandbox_finish` and `sandbox_reset` after an agent created many files.

For each size N, a sandbox of a 7-file task gets N new files from one command (as an agent
would), then ``sandbox_finish`` is timed, then ``sandbox_reset`` of the finished sandbox. A second
round times ``sandbox_reset`` of an open sandbox holding N new files. The baseline is the number
this bench printed before finish and reset were bounded (issue 10: 3,000 files 17 s, 20,000 still
running at 180 s); finish past the changed-file cap is refused quickly, so it also reports whether
finish was refused.

    .venv/bin/python bench/sandbox_many_files.py [--sizes 3000,20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agent_rl_sandbox.schemas.tools import SandboxExecInput, SandboxFinishInput, SandboxResetInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError

MAKE = "python3 -c \"import os\nos.makedirs('many', exist_ok=True)\nfor i in range({n}): open(f'many/f{{i:05d}}.txt', 'w').write(str(i))\""


def make_task(root: Path, task_id: str, cap: int | None) -> None:
    (root / "repo").mkdir(parents=True)
    for i in range(7):
        (root / "repo" / f"m{i}.py").write_text(f"X = {i}\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("#!/usr/bin/env bash\nexit 0\n")
    (root / "instruction.md").write_text("# Many files\n")
    (root / "task.toml").write_text(
        f'id = "{task_id}"\nbehaviour = "bench"\n'
        + (f"[limits]\nmax_changed_files = {cap}\ndisk_mb = 4096\n" if cap else "")
        + '[reward]\n[[reward.criteria]]\nid = "v"\ntype = "verifier_exit_code"\n'
    )


def one(services: Services, task_id: str, n: int) -> dict:
    sb = services.sandbox
    first = sb.reset(SandboxResetInput(task_id=task_id, agent_name="bench"))
    sid = first.sandbox_id
    t0 = time.perf_counter()
    sb.exec(SandboxExecInput(sandbox_id=sid, command=MAKE.format(n=n)))
    exec_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        fin = sb.finish(SandboxFinishInput(sandbox_id=sid, message="made many files"))
        refused = f"reward {fin.reward}" + (f" ({fin.verifier_output[:70]})" if fin.verifier_exit_code is None else "")
    except ActionError as e:  # refused: too many changed files; finish after removing them
        refused = f"refused: {e.message[:70]}"
        sb.exec(SandboxExecInput(sandbox_id=sid, command="rm -rf many"))
        sb.finish(SandboxFinishInput(sandbox_id=sid, message="removed them"))
    finish_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = sb.reset(SandboxResetInput(task_id=task_id, sandbox_id=sid, agent_name="bench"))
    reset_after_finish_s = time.perf_counter() - t0
    assert out.tree_hash == first.tree_hash
    sb.exec(SandboxExecInput(sandbox_id=sid, command=MAKE.format(n=n)))
    t0 = time.perf_counter()
    out = sb.reset(SandboxResetInput(task_id=task_id, sandbox_id=sid, agent_name="bench"))
    reset_open_s = time.perf_counter() - t0
    assert out.tree_hash == first.tree_hash
    return {
        "n": n,
        "exec_s": exec_s,
        "finish_s": finish_s,
        "refused": refused,
        "reset_after_finish_s": reset_after_finish_s,
        "reset_open_s": reset_open_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="3000,20000")
    ap.add_argument(
        "--cap", type=int, default=50_000, help="max_changed_files of the second task (the first keeps the default)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ars-bench-") as tmp:
        tmp = Path(tmp)
        make_task(tmp / "tasks" / "many", "bench/many", None)
        make_task(tmp / "tasks" / "many-raised", "bench/many-raised", args.cap)
        services = Services.build(Settings(home=tmp / "home", task_dirs=(tmp / "tasks",)))
        try:
            print(f"isolation: {services.sandbox.isolation.kind}")
            print(
                f"{'task':<20}{'files':>7}{'exec s':>9}{'finish s':>10}{'reset(fin) s':>14}{'reset(open) s':>15}  finish outcome"
            )
            sizes = [int(x) for x in args.sizes.split(",")]
            for task_id, n in [(t, n) for t in ("bench/many", "bench/many-raised") for n in sizes]:
                if task_id not in services.sandbox.tasks:  # a checkout before max_changed_files existed
                    print(f"{task_id:<20}{n:>7}  (task not loadable here: {services.sandbox.task_problems[:1]})")
                    continue
                r = one(services, task_id, n)
                print(
                    f"{task_id:<20}{r['n']:>7}{r['exec_s']:>9.2f}{r['finish_s']:>10.2f}{r['reset_after_finish_s']:>14.2f}"
                    f"{r['reset_open_s']:>15.2f}  {r['refused']}",
                    flush=True,
                )
        finally:
            services.sandbox.close()
            services.close()


if __name__ == "__main__":
    main()

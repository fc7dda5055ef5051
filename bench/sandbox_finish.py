"""Benchmark: `sandbox_finish` with the trusted runner vs a pytest shell verifier of the same cases.

The task is the built-in ``claim-before-edit`` (10 hidden checks in ``tests/checks.toml``: 9 call
cases and the claims check). The baseline is the same task with the verifier it had before the
trusted runner: ``tests/test.sh`` running ``python -m pytest`` over the same cases in one sandbox
(which imports the agent's code into the process that decides). Each round resets the sandbox,
claims and writes the fix, and times ``sandbox_finish`` (export, verifier, scoring). Prints p50/p95
of both and their ratio, each with the answer held to the verifier-answer quantum
(``--quantum``, default the server's: ``Settings.verifier_answer_quantum_s``) and answered at once
(quantum 0), and the hold's cost as a ratio.

    .venv/bin/python bench/sandbox_finish.py [--rounds 10] [--quantum 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR

TASK = BUILTIN_TASKS_DIR / "claim-before-edit"
FIX = (TASK / "solution" / "files" / "pricing.py").read_text()

PYTEST_SUITE = """
import pytest
from shopcart.cart import Cart
from shopcart.pricing import apply_discount


@pytest.mark.parametrize(
    ("total", "percent", "expected"),
    [(1000, 10, 900), (999, 50, 499), (1234, 0, 1234), (1234, 100, 0), (1, 1, 0), (10_000, 25, 7_500)],
)
def test_apply_discount(total, percent, expected):
    assert apply_discount(total, percent) == expected


@pytest.mark.parametrize("percent", [-1, 101])
def test_rejects_out_of_range(percent):
    with pytest.raises(ValueError):
        apply_discount(100, percent)


def test_cart_total_uses_discount():
    cart = Cart()
    cart.add("book", 1500, 2)
    assert cart.total(10) == 2700
"""

PYTEST_SCRIPT = """#!/usr/bin/env bash
set -u
cd "$SANDBOX_REPO" || exit 2
python -m pytest -q -p no:cacheprovider --noconftest -o pythonpath="$SANDBOX_REPO" --junitxml "$VERIFIER_LOGS/junit.xml" \\
  -c "$VERIFIER_DIR/pytest.ini" --rootdir "$VERIFIER_DIR" "$VERIFIER_DIR/test_hidden.py"
"""


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def pytest_task(root: Path) -> None:
    """A copy of the task under ``root`` whose verifier is the pytest shell script."""
    shutil.copytree(TASK, root, ignore=shutil.ignore_patterns("train-*", "heldout-*", "__pycache__"))
    shutil.rmtree(root / "tests")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text(PYTEST_SCRIPT)
    (root / "tests" / "test_hidden.py").write_text(PYTEST_SUITE)
    (root / "tests" / "pytest.ini").write_text("[pytest]\n")
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text(re.sub(r'^id = ".*"$', 'id = "bench/pytest-verifier"', toml, count=1, flags=re.M))


def rounds_of(services: Services, task_id: str, rounds: int) -> list[float]:
    sb = services.sandbox
    times = []
    sid = None
    for _ in range(rounds):
        r = sb.reset(io.SandboxResetInput(task_id=task_id, agent_name="bench", sandbox_id=sid))
        sid = r.sandbox_id
        sb.claim(io.SandboxClaimInput(sandbox_id=sid, paths=["shopcart/pricing.py"]))
        sb.write_file(io.SandboxWriteFileInput(sandbox_id=sid, path="shopcart/pricing.py", content=FIX))
        t0 = time.perf_counter()
        out = sb.finish(io.SandboxFinishInput(sandbox_id=sid, message="Fixed; `python -m pytest -q` passed."))
        times.append(time.perf_counter() - t0)
        assert out.verifier_exit_code == 0, out.verifier_output
    return times


def _line(label: str, times: list[float]) -> str:
    return (
        f"{label}: p50 {pct(times, 0.5) * 1000:.0f} ms, p95 {pct(times, 0.95) * 1000:.0f} ms "
        f"(mean {statistics.mean(times) * 1000:.0f} ms)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--quantum", type=float, default=None, help="seconds; default the server's setting")
    args = ap.parse_args()
    quantum = args.quantum if args.quantum is not None else Settings().verifier_answer_quantum_s
    runs: dict[tuple[str, float], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / "tasks"
        pytest_task(tasks / "pytest-verifier")
        for q in (0.0, quantum):
            services = Services.build(
                Settings(home=Path(tmp) / f"home-{q}", task_dirs=(tasks,), verifier_answer_quantum_s=q)
            )
            try:
                runs["trusted", q] = rounds_of(services, "claim-before-edit", args.rounds)
                runs["legacy", q] = rounds_of(services, "bench/pytest-verifier", args.rounds)
            finally:
                services.sandbox.close()
                services.close()
    for q in (0.0, quantum):
        held = f"answer held to {q:g} s steps" if q else "answered at once"
        print(_line(f"sandbox_finish, trusted runner (checks.toml), {held}", runs["trusted", q]))
        print(_line(f"baseline, pytest shell verifier, same cases, {held}", runs["legacy", q]))
        print(
            f"  ratio (baseline p50 / trusted p50): {pct(runs['legacy', q], 0.5) / pct(runs['trusted', q], 0.5):.1f}x"
        )
    for kind in ("trusted", "legacy"):
        ratio = pct(runs[kind, quantum], 0.5) / pct(runs[kind, 0.0], 0.5)
        print(f"hold's cost, {kind}: p50 held / p50 at once = {ratio:.1f}x")


if __name__ == "__main__":
    main()

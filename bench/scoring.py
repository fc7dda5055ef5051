"""Benchmark: scoring throughput and how it grows from 1k to 10k trajectories (it must be linear).

Generates a suite of 10,000 varied trajectories (good, careless, masked test runs, self-logged
claims, loops, malformed calls; 6 to 40 steps each) as ATIF-like JSON text, then for each size N in
1k, 2k, 5k, 10k measures, in the same run:

- baseline: ``json.loads`` of the N trajectories' JSON text (the least any scorer must do);
- scorer: ``Trajectory.model_validate_json`` + ``score_trajectory`` (every criterion type that needs
  no sandbox, plus file criteria over an in-memory final state) + ``build_report`` (stats, groups,
  zero-variance share) + ``report_json``.

Prints trajectories/second for both, their ratio, and the time ratio against 1k next to the ideal
(linear) ratio N/1k; exits 1 when the per-trajectory time at the largest size is more than 1.5x the
per-trajectory time at the smallest (super-linear growth). The harness pauses CPython's cyclic GC
while it scores a batch (scoring makes no reference cycles); a last line shows the growth with the
GC running, for comparison. Times are CPU seconds of this process (``time.process_time``), so other
load on a shared machine does not skew them. Usage::

    python bench/scoring.py                      # 1k, 2k, 5k, 10k
    python bench/scoring.py --sizes 100,200      # quick
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from contextlib import nullcontext

from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.schemas.trajectory import Trajectory
from agent_rl_sandbox.tools.evals import FinalState, build_report, report_json, score_trajectory
from agent_rl_sandbox.tools.evals._report import paused_gc
from agent_rl_sandbox.tools.evals._shell import find_test_invocation

SPEC = RewardSpec.model_validate(
    {
        "aggregation": "weighted",
        "pass_threshold": 0.8,
        "criteria": [
            {
                "id": "claimed",
                "type": "required_action",
                "action": {"tool": "sandbox_claim", "args_contains": ["pricing.py"]},
            },
            {
                "id": "order",
                "type": "action_order",
                "sequence": [{"tool": "sandbox_claim"}, {"tool": "sandbox_write_file"}, {"tool": "sandbox_exec"}],
            },
            {"id": "no_curl", "type": "forbidden_action", "command_pattern": r"curl[^|]*\|\s*(ba)?sh"},
            {"id": "claims_first", "type": "claims_before_edit"},
            {"id": "in_claims", "type": "edits_within_claims"},
            {"id": "fixed", "type": "file_contains", "path": "shopcart/pricing.py", "text": "(100 - percent)"},
            {"id": "tests_kept", "type": "file_unchanged", "path": "tests/test_pricing.py"},
            {"id": "evidence", "type": "final_message_evidence"},
            {"id": "budget", "type": "budget", "max_steps": 30, "max_commands": 12, "max_seconds": 600},
            {"id": "no_loops", "type": "no_loops"},
        ],
    }
)
BASE = {"shopcart/pricing.py": b"return total_cents * percent // 100\n", "tests/test_pricing.py": b"def test(): ...\n"}
FIXED = {**BASE, "shopcart/pricing.py": b"return total_cents * (100 - percent) // 100\n"}
STATES = {
    "fixed": FinalState(
        read_file=FIXED.get, base_file=BASE.get, changed_paths=("shopcart/pricing.py",), verifier_exit_code=0
    ),
    "base": FinalState(read_file=BASE.get, base_file=BASE.get, changed_paths=(), verifier_exit_code=1),
}
COMMANDS = [
    "python -m pytest -q",
    "pytest -q tests/test_pricing.py",
    "python -m pytest -q || true",
    "pytest -q | tail -3",
    "ls shopcart",
    "cat shopcart/pricing.py",
    "git diff --stat",
    "python -c 'import shopcart'",
    "grep -n percent -r shopcart",
]


def _step(
    i: int, tool: str, args: dict, *, prov: str = "server", code: int | None = None, out: str = "", changed=None
) -> dict:
    cid = f"c{i}"
    extra = {"files_changed": changed} if changed else {}
    return {
        "step_id": i,
        "timestamp": f"2026-11-29T12:{i // 60:02d}:{i % 60:02d}.000000Z",
        "source": "agent",
        "tool_calls": [{"tool_call_id": cid, "function_name": tool, "arguments": args}],
        "observation": {"results": [{"source_call_id": cid, "content": out}]},
        "provenance": prov,
        "outcome": "ok" if code in (None, 0) else "error",
        "exit_code": code,
        "extra": extra,
    }


def generate(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """``n`` (trajectory JSON text, final-state key) pairs; 10 task variants, varied behaviours."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        kind = rng.choice(["good", "good", "careless", "masked", "selflog", "loop", "malformed"])
        steps: list[dict] = []

        def add(tool, args, steps=steps, **kw):
            steps.append(_step(len(steps) + 1, tool, args, **kw))

        for _ in range(rng.randint(2, 12)):  # exploration
            cmd = rng.choice(COMMANDS[4:])
            add("sandbox_exec", {"command": cmd}, code=0, out="ok\n" * rng.randint(1, 20))
        if kind == "loop":
            for _ in range(rng.randint(3, 8)):
                add("sandbox_exec", {"command": "python -m pytest tests/nope.py"}, code=4, out="ERROR: file not found")
        if kind == "malformed":
            steps.append(
                {
                    **_step(len(steps) + 1, "invalid_tool_call", {}, code=None, out="error: malformed"),
                    "outcome": "error",
                    "extra": {"malformed_tool_call": "broken JSON"},
                }
            )
        prov = "agent" if kind == "selflog" else "server"
        if kind != "careless":
            add("sandbox_claim", {"paths": ["shopcart/pricing.py"], "reason": "fix"}, prov=prov)
        add(
            "sandbox_write_file",
            {"path": "shopcart/pricing.py", "content": "x" * rng.randint(50, 800)},
            changed=["shopcart/pricing.py"],
        )
        test_cmd = COMMANDS[2] if kind == "masked" else rng.choice(COMMANDS[:2])
        for _ in range(rng.randint(1, 4)):
            add("sandbox_exec", {"command": test_cmd}, code=0, out=f"{rng.randint(3, 40)} passed in 0.1s")
        msg = (
            "Ran `python -m pytest -q` after the edit: all tests passed."
            if kind != "careless"
            else "Fixed. All tests pass."
        )
        steps.append(
            {
                "step_id": len(steps) + 1,
                "timestamp": "2026-11-29T13:00:00.000000Z",
                "source": "agent",
                "message": msg,
                "provenance": "server",
                "done": True,
            }
        )
        doc = {
            "session_id": f"traj_{k:06d}",
            "agent": {"name": "bench"},
            "task_id": f"claim-before-edit/v{k % 10}",
            "status": "finished",
            "created_at": "2026-11-29T12:00:00.000000Z",
            "final_message": msg,
            "steps": steps,
            "step_count": len(steps),
        }
        out.append((json.dumps(doc), "base" if kind == "careless" else "fixed"))
    return out


def run_baseline(items) -> float:
    t0 = time.process_time()
    for text, _ in items:
        json.loads(text)
    return time.process_time() - t0


def run_scorer(items, *, pause_gc: bool = True) -> tuple[float, float]:
    """(seconds to parse, score and aggregate, seconds to write the canonical report JSON), as the
    harness does it (cyclic GC paused for the batch unless ``pause_gc`` is false)."""
    find_test_invocation.cache_clear()
    with paused_gc() if pause_gc else nullcontext():
        t0 = time.process_time()
        scores = [score_trajectory(Trajectory.model_validate_json(text), SPEC, STATES[key]) for text, key in items]
        report = build_report("store", "bench", scores)
        t1 = time.process_time()
        report_json(report)
        return t1 - t0, time.process_time() - t1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000", help="comma-separated trajectory counts")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    t0 = time.process_time()
    items = generate(max(sizes))
    gen_s = time.process_time() - t0
    avg_steps = sum(t.count('"step_id"') for t, _ in items) / len(items)
    print(f"generated {len(items)} trajectories ({avg_steps:.1f} steps on average) in {gen_s:.1f} s")
    print(
        f"{'N':>7} {'score s':>8} {'traj/s':>7} {'+json s':>8} {'traj/s':>7} {'json.loads s':>13} {'traj/s':>8} "
        f"{'slower':>7} {'time/t(1st)':>12} {'ideal':>6} {'per-traj':>9}"
    )
    rows = []
    for n in sizes:
        sub = items[:n]
        gc.collect()
        base = run_baseline(sub)
        gc.collect()
        score, write = run_scorer(sub)
        rows.append((n, score + write, base, score, write))
    n0, s0 = rows[0][0], rows[0][1]
    for n, total, base, score, write in rows:
        print(
            f"{n:>7} {score:>8.3f} {n / score:>7.0f} {write:>8.3f} {n / total:>7.0f} {base:>13.4f} {n / base:>8.0f} "
            f"{total / base:>6.0f}x {total / s0:>12.2f} {n / n0:>6.1f} {(total / n) / (s0 / n0):>8.2f}x"
        )
    growth = (rows[-1][1] / rows[-1][0]) / (s0 / n0)
    linear = growth <= 1.5
    print(
        "score s: parse + score + aggregate; +json s: writing the canonical (sorted, indented) report; "
        "traj/s after it counts both"
    )
    print(
        f"growth {n0} -> {rows[-1][0]}: time x{rows[-1][1] / s0:.2f} for x{rows[-1][0] / n0:.1f} trajectories; "
        f"per-trajectory time x{growth:.2f} -> {'linear' if linear else 'SUPER-LINEAR'}"
    )
    if len(rows) > 1:
        gc.collect()
        a, _ = run_scorer(items[:n0], pause_gc=False)
        gc.collect()
        b, _ = run_scorer(items[: rows[-1][0]], pause_gc=False)
        print(
            f"for comparison, scoring with the cyclic GC running (the harness pauses it): per-trajectory time "
            f"x{(b / rows[-1][0]) / (a / n0):.2f} from {n0} to {rows[-1][0]}"
        )
    return 0 if linear else 1


if __name__ == "__main__":
    sys.exit(main())

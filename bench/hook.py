"""Benchmark: one ``agent-rl-sandbox hook claude-code`` process per event, against ``python -c pass``.

What a client waits for per event is the whole hook process. This runs, interleaved in one run (so
machine load hits both alike), ``--events`` rounds of:

- baseline: ``python -c pass`` (the floor: starting the interpreter and ``site``);
- hook: ``python -m agent_rl_sandbox.cli hook claude-code`` with a real PostToolUse payload on stdin
  (a fresh home; the background drainer starts as it would for a user);
- before, for reference: the same event folded in the hook process itself
  (``AGENT_RL_SANDBOX_HOOK_DRAIN=inline``: the store's imports, what every event cost before),
  ``--inline`` rounds of it.

Then it folds everything queued (``hook drain``), checks that every event reached the store, and
prints medians, p90, the ratio to the baseline, the extra milliseconds over it, and the drainer's
cost per event (one ``hook drain`` of the same number of events queued with
``AGENT_RL_SANDBOX_HOOK_DRAIN=off``, start-up included). Goal: a hook event under 150 ms whole-process. Usage::

    python bench/hook.py               # 40 rounds
    python bench/hook.py --events 10   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = ROOT / "tests" / "agents" / "fixtures" / "claude_code" / "PostToolUse.input.json"


def _run(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    dt = time.perf_counter() - t0
    if proc.returncode != 0 or proc.stdout:
        raise SystemExit(f"{argv} failed: rc {proc.returncode}, stdout {proc.stdout!r}, stderr {proc.stderr!r}")
    return dt


def _p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(len(xs) * 0.9) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=40, help="interleaved rounds (default 40)")
    ap.add_argument("--inline", type=int, default=5, help="rounds of the inline (old) path (default 5)")
    args = ap.parse_args()
    base = json.loads(PAYLOAD.read_text())
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        env = dict(os.environ, AGENT_RL_SANDBOX_HOME=str(Path(tmp) / "home"), AGENT_RL_SANDBOX_HOOK_LINGER="2")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        hook = [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "claude-code"]
        passes, hooks, inline = [], [], []
        for i in range(args.events):
            ev = dict(base, session_id="bench", tool_use_id=f"toolu_{i}")
            passes.append(_run([sys.executable, "-c", "pass"], b"", env))
            hooks.append(_run(hook, json.dumps(ev).encode(), env))
        for i in range(args.inline):
            ev = dict(base, session_id="bench", tool_use_id=f"toolu_inline_{i}")
            inline.append(_run(hook, json.dumps(ev).encode(), dict(env, AGENT_RL_SANDBOX_HOOK_DRAIN="inline")))
        t0 = time.perf_counter()
        drained = subprocess.run(
            [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "drain", "--wait", "60"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        drain_s = time.perf_counter() - t0
        # The drainer's side: the same events queued only, then one `hook drain` folds them all.
        env2 = dict(env, AGENT_RL_SANDBOX_HOME=str(Path(tmp) / "home2"), AGENT_RL_SANDBOX_HOOK_DRAIN="off")
        for i in range(args.events):
            _run(hook, json.dumps(dict(base, session_id="bench2", tool_use_id=f"toolu_{i}")).encode(), env2)
        t0 = time.perf_counter()
        folded = subprocess.run(
            [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "drain"], capture_output=True, text=True, env=env2
        )
        fold_s = time.perf_counter() - t0
        count = subprocess.run(
            [sys.executable, "-m", "agent_rl_sandbox.cli", "trajectories", "list", "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    steps = sum(t.get("step_count", 0) for t in json.loads(count.stdout or "{}").get("trajectories", []))
    mp, mh = statistics.median(passes), statistics.median(hooks)
    print(
        f"python -c pass:          median {mp * 1000:6.1f} ms  p90 {_p90(passes) * 1000:6.1f} ms  ({len(passes)} runs)"
    )
    print(f"hook (queue + drainer):  median {mh * 1000:6.1f} ms  p90 {_p90(hooks) * 1000:6.1f} ms  ({len(hooks)} runs)")
    if inline:
        mi = statistics.median(inline)
        print(f"hook inline (before):    median {mi * 1000:6.1f} ms  ({len(inline)} runs)")
    print(f"ratio hook / baseline: {mh / mp:.2f}x  (+{(mh - mp) * 1000:.1f} ms over starting Python)")
    if inline:
        print(f"speed-up over the inline fold: {statistics.median(inline) / mh:.1f}x")
    print(
        f"final drain: {drain_s:.2f} s ({drained.stdout.strip()}); steps in the store: {steps} of {args.events + args.inline}"
    )
    print(
        f"one drain of {args.events} queued events: {fold_s:.2f} s incl. start-up ({folded.stdout.strip()}),"
        f" {fold_s / args.events * 1000:.0f} ms/event"
    )
    print("goal: hook under 150 ms whole process:", "met" if mh < 0.150 else "NOT met")


if __name__ == "__main__":
    main()

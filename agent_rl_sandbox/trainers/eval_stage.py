"""The worker's ``baseline`` and ``post_eval`` stages: the policy agent plays the held-out variants
of the job's behaviour with the base model (``baseline``) or the base + the trained adapter
(``post_eval``), and the store scores them.

Run as ``python -m agent_rl_sandbox.trainers.eval_stage baseline|post_eval [--episodes N]
[--max-turns N] [--max-new-tokens N]`` in the job's workspace (the options are the operator's, in
``worker.toml``; nothing in a spec becomes a command line). It reads ``$AGENT_RL_SANDBOX_JOB_JSON``
(``spec.base_model``, ``spec.gate.behaviour``), the adapter from ``$AGENT_RL_SANDBOX_ADAPTER_DIR``
(post_eval), and opens the store the worker uses (``Settings.from_env()``).

- **Held-out only**: the suite is every task of the behaviour whose split is ``heldout`` (none: exit 2).
- **Same prompt as training**: the tools offered, and their declarations, are those of the job's
  training rows (the dataset's ``tools`` column) when it has them, else the task's allowed
  episode tools; the messages are the ones the training exports render (the instruction as the
  user turn, the recorded observations as tool turns).
- Episodes are greedy (``--episodes`` > 1 samples at temperature 0.7 after the first); each is a
  trajectory in the store named ``<stage>:<job id>`` (provenance ``server``).

Writes ``<stage>.report.json`` (the eval report of those trajectories, :func:`~agent_rl_sandbox.tools.evals.report_json`),
``<stage>_episodes.json`` (one row per episode) and merges into ``$AGENT_RL_SANDBOX_SCORES``:
``baseline`` / ``final`` (pass rate), ``baseline_mean_reward`` / ``final_mean_reward``, and the
report paths. A failure writes ``<stage>_error.json`` with the reason. Exit status: 0 evaluated; 2 the
job or the suite is unusable; 1 anything else failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agent_rl_sandbox.agents.policy import Budget, play_episode
from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS

EVAL_BUDGET = Budget(max_turns=6, max_new_tokens=128)
"""Turns and tokens of one evaluation episode (the stage's --max-turns / --max-new-tokens)."""

SCORE_KEYS = {"baseline": ("baseline", "baseline_mean_reward"), "post_eval": ("final", "final_mean_reward")}


class StageError(Exception):
    """The job or the suite cannot be evaluated (exit 2); the message says why and what to do."""


def heldout_tasks(services: Any, behaviour: str) -> list[str]:
    """Task ids of ``behaviour``'s held-out variants, sorted. Raises :class:`StageError` when none."""
    ids = sorted(
        t.id for t in services.sandbox.tasks.values() if t.config.behaviour == behaviour and t.config.split == "heldout"
    )
    if not ids:
        raise StageError(
            f"behaviour {behaviour!r} has no held-out variants. Next step: add heldout tasks or fix gate.behaviour"
        )
    return ids


def training_tools(dataset_path: str | None) -> tuple[tuple[str, ...], list[dict[str, Any]]] | None:
    """The episode tools and declarations of the first training row that declares tools, or ``None``."""
    if not dataset_path:
        return None
    try:
        with open(dataset_path, encoding="utf-8") as f:
            for line in f:
                row = json.loads(line) if line.strip() else {}
                tools = row.get("tools") if isinstance(row, dict) else None
                if isinstance(tools, str):
                    tools = json.loads(tools)
                if isinstance(tools, list) and tools:
                    names = tuple(str((t.get("function") or {}).get("name")) for t in tools if isinstance(t, dict))
                    if names and all(n in EPISODE_TOOLS for n in names):
                        return names, tools
                    return None
    except (OSError, ValueError):
        return None
    return None


def run(stage: str, *, episodes: int = 1, budget: Budget = EVAL_BUDGET) -> dict[str, Any]:
    """Evaluate and write the files of the module docstring; returns the summary. Raises
    :class:`StageError` for an unusable job."""
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings
    from agent_rl_sandbox.tools.evals import report_json, score_store
    from agent_rl_sandbox.trainers.policy_model import TransformersPolicy

    ws = Path(os.environ.get("AGENT_RL_SANDBOX_WORKSPACE", "."))
    job_json = Path(os.environ.get("AGENT_RL_SANDBOX_JOB_JSON", ws / "job.json"))
    try:
        doc = json.loads(job_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StageError(f"cannot read {job_json}: {exc}. Next step: run the stage from the worker") from None
    spec = doc.get("spec") or {}
    job_id = str(doc.get("job_id") or spec.get("job_id") or "job")
    behaviour = (spec.get("gate") or {}).get("behaviour")
    base = spec.get("base_model")
    if not isinstance(behaviour, str) or not isinstance(base, str):
        raise StageError("job.json has no spec.gate.behaviour or spec.base_model. Next step: check the job spec")
    if not (Path(base) / "config.json").is_file():
        raise StageError(
            f"base model {base!r} is not a local model folder (no config.json). Next step: fix spec.base_model"
        )
    adapter = None
    if stage == "post_eval":
        adapter = Path(os.environ.get("AGENT_RL_SANDBOX_ADAPTER_DIR", ws / "adapter"))
        if not (adapter / "adapter_config.json").is_file():
            raise StageError(f"no trained adapter in {adapter}. Next step: the train stage must save one")
    dataset = (doc.get("dataset") or {}).get("path") or (spec.get("dataset") or {}).get("path")
    # the episodes run in this process: no client times sandbox_finish, so no answer hold (see agentic.py)
    services = Services.build(Settings.from_env(verifier_answer_quantum_s=0.0))
    try:
        suite = heldout_tasks(services, behaviour)
        found = training_tools(dataset)
        t0 = time.monotonic()
        policy = TransformersPolicy(base, adapter, name=f"{base}+{adapter}" if adapter else base)
        sampled = TransformersPolicy(base, adapter, temperature=0.7, seed=1) if episodes > 1 else None
        rows, sessions = [], []
        for task_id in suite:
            task = services.sandbox.task(task_id)
            tools = found[0] if found else tuple(t for t in EPISODE_TOOLS if t in task.config.tools.allowed)
            decls = found[1] if found else None
            for i in range(episodes):
                model = policy if i == 0 or sampled is None else sampled
                r = play_episode(
                    services, model, task_id, agent_name=f"{stage}:{job_id}", tools=tools, budget=budget,
                    declarations=decls,
                )  # fmt: skip
                sessions.append(r.session_id)
                rows.append(
                    {"task_id": task_id, "episode": i, "session_id": r.session_id, "reward": r.reward,
                     "passed": r.passed, "turns": r.turns, "ended_by": r.ended_by, "tool_errors": r.tool_errors,
                     "failed_criteria": list(r.failed_criteria)}
                )  # fmt: skip
        report = score_store(services, session_ids=sessions)
        report_path = ws / f"{stage}.report.json"
        report_path.write_text(report_json(report), encoding="utf-8")
        (ws / f"{stage}_episodes.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        n = len(rows)
        pass_rate = sum(r["passed"] for r in rows) / n
        mean = sum(r["reward"] for r in rows) / n
        scores_path = Path(os.environ.get("AGENT_RL_SANDBOX_SCORES", ws / "scores.json"))
        try:
            scores = json.loads(scores_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            scores = {}
        rate_key, mean_key = SCORE_KEYS[stage]
        scores.update(
            {rate_key: round(pass_rate, 6), mean_key: round(mean, 6), f"{stage}_report": str(report_path),
             f"{stage}_episodes": n, "suite": suite}
        )  # fmt: skip
        scores_path.write_text(json.dumps(scores, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        summary = {
            "stage": stage,
            "episodes": n,
            "pass_rate": pass_rate,
            "mean_reward": mean,
            "seconds": round(time.monotonic() - t0, 1),
        }
        print(f"{stage}: {n} held-out episodes of {behaviour}: pass rate {pass_rate:.3f}, mean reward {mean:.3f}")
        return summary
    finally:
        services.close()


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run the stage, write ``<stage>_error.json`` on failure; the exit status."""
    ap = argparse.ArgumentParser(prog="agent_rl_sandbox.trainers.eval_stage")
    ap.add_argument("stage", choices=sorted(SCORE_KEYS))
    ap.add_argument("--episodes", type=int, default=1)
    ap.add_argument("--max-turns", type=int, default=6)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    args = ap.parse_args(argv)
    ws = Path(os.environ.get("AGENT_RL_SANDBOX_WORKSPACE", "."))
    try:
        run(
            args.stage,
            episodes=max(1, args.episodes),
            budget=Budget(max_turns=args.max_turns, max_new_tokens=args.max_new_tokens),
        )
        return 0
    except StageError as exc:
        reason, code = str(exc), 2
    except Exception as exc:  # noqa: BLE001 - a crash is recorded for the job, then reported by exit status
        reason, code = f"{type(exc).__name__}: {exc}", 1
    (ws / f"{args.stage}_error.json").write_text(
        json.dumps({"stage": args.stage, "reason": reason}) + "\n", encoding="utf-8"
    )
    print(f"{args.stage}: {reason}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())

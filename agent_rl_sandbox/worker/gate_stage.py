"""The ``gate`` stage: the job's eval gate over the post-training held-out report, plus the two
checks every training gate carries.

Run as ``python -m agent_rl_sandbox.worker.gate_stage [--max-regression M]`` in the job's
workspace, after ``post_eval``. It reads ``job.json`` (``spec.gate.name``, ``spec.gate.behaviour``),
``post_eval.report.json`` and ``baseline.report.json`` (written by
:mod:`agent_rl_sandbox.trainers.eval_stage`), and the gates of the worker's home (built-ins and
``<home>/gates.toml``). The verdict is the gate's checks and:

- **no regression against the base model beyond a margin**: ``max_regression`` (the gate's own,
  else ``--max-regression``, default 0.0) on the gate's ``regression_metric`` with this job's
  baseline report as the baseline;
- **held-out only**: every trajectory of the report is a held-out variant of ``gate.behaviour``
  (a train variant, another behaviour or an unknown task fails the gate).

Writes ``gate_report.json`` (the verdict with every check; the worker attaches it to the adapter
candidate). Exit status (the worker's contract): 0 ``gate_passed``, 1 ``gate_failed``, 2 the
inputs are missing or unreadable (the job fails).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_MAX_REGRESSION = 0.0


def main(argv: list[str] | None = None) -> int:
    """Run the stage; returns the exit status of the module docstring."""
    ap = argparse.ArgumentParser(prog="agent_rl_sandbox.worker.gate_stage")
    ap.add_argument("--max-regression", type=float, default=DEFAULT_MAX_REGRESSION)
    args = ap.parse_args(argv)
    from agent_rl_sandbox.schemas.reward import EvalReport, GateCheck
    from agent_rl_sandbox.settings import Settings
    from agent_rl_sandbox.tools.evals import evaluate_gate, load_gates
    from agent_rl_sandbox.tools.sandbox import discover_tasks

    ws = Path(os.environ.get("AGENT_RL_SANDBOX_WORKSPACE", "."))
    try:
        doc = json.loads(Path(os.environ.get("AGENT_RL_SANDBOX_JOB_JSON", ws / "job.json")).read_text("utf-8"))
        gate_ref = doc["spec"]["gate"]
        report = EvalReport.model_validate_json((ws / "post_eval.report.json").read_text("utf-8"))
        baseline = ws / "baseline.report.json"
        if not baseline.is_file():
            raise FileNotFoundError(f"{baseline} (the baseline stage writes it)")
        settings = Settings.from_env()
        gates, gates_file = load_gates(settings.home)
    except Exception as exc:  # noqa: BLE001 - any unreadable input is exit 2 with the reason
        (ws / "gate_error.json").write_text(json.dumps({"stage": "gate", "reason": f"{exc}"}) + "\n", "utf-8")
        print(f"gate: cannot gate: {exc}", file=sys.stderr)
        return 2
    name, behaviour = gate_ref.get("name", "deploy"), gate_ref.get("behaviour")
    gate = gates.get(name)
    if gate is None:
        print(f"gate: unknown gate {name!r}; known: {', '.join(sorted(gates))}", file=sys.stderr)
        return 2
    if gate.max_regression is None:
        gate = gate.model_copy(update={"max_regression": args.max_regression})
    verdict = evaluate_gate(report, name, gate, base_dir=gates_file.parent if gates_file else None, baseline=baseline)
    tasks, _ = discover_tasks(settings.task_dirs)
    outside = sorted(
        {
            str(t.task_id)
            for t in report.trajectories
            if t.task_id not in tasks
            or tasks[t.task_id].config.behaviour != behaviour
            or tasks[t.task_id].config.split != "heldout"
        }
    )
    held = GateCheck(
        name="heldout_only",
        status="pass" if not outside else "fail",
        comparison="==",
        threshold=0,
        measured=len(outside),
        explanation=f"every scored trajectory is a held-out variant of {behaviour}"
        if not outside
        else f"{len(outside)} task(s) are not held-out variants of {behaviour}: {', '.join(outside[:5])}",
        what_would_change="score only the behaviour's held-out variants (the post_eval stage does)",
    )
    verdict = verdict.model_copy(
        update={
            "checks": [*verdict.checks, held],
            "passed": verdict.passed and not outside,
            "what_would_change": verdict.what_would_change
            + ([f"heldout_only: {held.what_would_change}"] if outside else []),
        }
    )
    out = {"gate": verdict.model_dump(mode="json"), "baseline_report": str(baseline), "report": "post_eval.report.json"}
    (ws / "gate_report.json").write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", "utf-8")
    for c in verdict.checks:
        print(f"gate {name}: {c.name}: {c.status} ({c.explanation})")
    print(f"gate {name}: {'PASSED' if verdict.passed else 'FAILED'}")
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""The worker's ``train`` stage: ``accelerate launch -m agent_rl_sandbox.trainers.train_stage``.

The shipped ``worker.toml`` runs it as::

    {python} -m accelerate.commands.launch --num_processes 1 --num_machines 1 --mixed_precision no
        --dynamo_backend no -m agent_rl_sandbox.trainers.train_stage

(one process on a CPU; on GPUs the operator raises ``--num_processes`` or adds ``--config_file`` with
their accelerate/DeepSpeed/FSDP config; the module is the same). It runs in the job's workspace and
reads the workspace paths from the environment the worker sets (``AGENT_RL_SANDBOX_JOB_JSON``,
``AGENT_RL_SANDBOX_ADAPTER_DIR``, ``AGENT_RL_SANDBOX_METRICS``, ``AGENT_RL_SANDBOX_TRAIN_LOG``,
``AGENT_RL_SANDBOX_WORKSPACE``; defaults: the files of the current folder). The plan comes from
``job.json`` only (:func:`~._plan.plan_from_job`); nothing in a spec becomes a command line.

Writes (see :mod:`._run`): ``train.log``, ``preflight.json``, ``metrics.jsonl``, ``metrics.png``,
``train_summary.json`` and the adapter. When the run is refused (bad plan, bad data, a preflight
refusal, a CUDA-only request on a CPU host, GRPO without reward variance) or crashes, it writes
``train_error.json`` (``{"stage", "kind": "refused" | "crash", "reason", "last_log_lines",
"traceback"?}``), keeps the workspace, prints the reason on stderr, and exits 1; the worker puts the
reason into the job's failure reason (``stage_failed:train: exit 1: <reason>``).

Exit status: 0 trained and saved; 1 refused or crashed.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections import deque
from pathlib import Path

from agent_rl_sandbox.trainers._run import RunPaths

LAST_LINES = 40
"""Lines of ``train.log`` copied into ``train_error.json``."""


def _paths() -> tuple[Path, RunPaths]:
    ws = Path(os.environ.get("AGENT_RL_SANDBOX_WORKSPACE", "."))
    paths = RunPaths(
        workspace=ws,
        adapter_dir=Path(os.environ.get("AGENT_RL_SANDBOX_ADAPTER_DIR", ws / "adapter")),
        metrics=Path(os.environ.get("AGENT_RL_SANDBOX_METRICS", ws / "metrics.jsonl")),
        train_log=Path(os.environ.get("AGENT_RL_SANDBOX_TRAIN_LOG", ws / "train.log")),
    )
    return Path(os.environ.get("AGENT_RL_SANDBOX_JOB_JSON", ws / "job.json")), paths


def _log_to(path: Path) -> logging.Handler:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    for noisy in ("matplotlib", "PIL", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:  # route transformers' own log records (the Trainer's step logs) into train.log too
        import transformers

        transformers.logging.set_verbosity_info()
        transformers.logging.disable_default_handler()
        transformers.logging.enable_propagation()
    except ImportError:
        pass
    return handler


def _tail(path: Path, n: int = LAST_LINES) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return list(deque((line.rstrip("\n") for line in f), maxlen=n))
    except OSError:
        return []


def write_error(paths: RunPaths, kind: str, reason: str, tb: str | None = None) -> None:
    """Write ``train_error.json`` into the workspace (see the module docstring)."""
    ws = paths.workspace
    doc = {"stage": "train", "kind": kind, "reason": reason, "last_log_lines": _tail(paths.train_log)}
    if tb:
        doc["traceback"] = tb
    ws.mkdir(parents=True, exist_ok=True)
    tmp = paths.error.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, paths.error)


def main() -> int:
    """Run the stage; returns the exit status of the module docstring."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    job_json, paths = _paths()
    paths.error.unlink(missing_ok=True)
    _log_to(paths.train_log)
    log = logging.getLogger("agent_rl_sandbox.train_stage")
    try:
        from agent_rl_sandbox.trainers._data import DataError
        from agent_rl_sandbox.trainers._gpu import NeedsGpuError
        from agent_rl_sandbox.trainers._plan import PlanError, plan_from_job, read_job
        from agent_rl_sandbox.trainers._run import TrainingRefused, run_training

        refusals: tuple[type[BaseException], ...] = (PlanError, DataError, NeedsGpuError, TrainingRefused)
        plan = plan_from_job(read_job(job_json))
        log.info("plan: %s", json.dumps(plan.to_dict(), sort_keys=True))
        summary = run_training(plan, paths)
    except BaseException as exc:  # noqa: BLE001 - every failure is recorded in the workspace, then reported
        refused = "refusals" in locals() and isinstance(exc, refusals)
        reason = str(exc) if refused else f"{type(exc).__name__}: {exc}"
        log.error("train %s: %s", "refused" if refused else "crashed", reason)
        write_error(paths, "refused" if refused else "crash", reason, None if refused else traceback.format_exc())
        print(f"train: {'refused' if refused else 'crashed'}: {reason}", file=sys.stderr)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return 1
    if not summary:  # not the main process: it wrote nothing of its own
        return 0
    line = (
        f"train: {summary['trainer']} {summary['steps']} steps ({summary['stopped_by']}), "
        f"final loss {summary['final_loss']}, reward {summary['final_reward']}, "
        f"{summary['tokens_per_s']} tokens/s; adapter in {summary['adapter_dir']}"
    )
    log.info("%s", line)
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

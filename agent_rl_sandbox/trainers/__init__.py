"""Training: the tiny local model and the TRL/PEFT runners. The only subpackage allowed to import
torch, transformers, trl, peft, accelerate, datasets, bitsandbytes or vllm (an import-linter
contract in pyproject.toml holds this).

Importing this package (and its modules) imports none of them: each function imports the stack
inside, so the CLI can import ``trainers`` lazily and tell a light install what is missing
(:func:`missing_train_packages`, :data:`TRAIN_EXTRA_HINT`).

Modules:

- :mod:`.tiny_model`: :func:`~.tiny_model.build_tiny_model`, :func:`~.tiny_model.self_check`,
  :func:`~.tiny_model.load_tiny_model`: a small Qwen2-style model with a locally trained tokenizer
  and TRL's Qwen2.5 chat template.
- :mod:`.train_stage`: the worker's ``train`` stage (``accelerate launch -m ...train_stage``).
- :mod:`._plan` (job.json -> :class:`TrainPlan`, pure Python), :mod:`._data` (rows, preflight),
  :mod:`._run` (:func:`run_training`: TRL + PEFT LoRA for sft, dpo, kto, grpo), :mod:`._metrics`
  (metrics.jsonl, caps, the plot), :mod:`._gpu` (QLoRA and vLLM configurations; CUDA only),
  :mod:`._rewards` (GRPO's built-in rewards), :mod:`._load` (:func:`load_model`: base + adapter).

The public names below are re-exported lazily (``trainers.run_training`` imports ``._run`` on first
use), so ``import agent_rl_sandbox.trainers`` stays light.
"""

from __future__ import annotations

import importlib.util

TRAIN_PACKAGES: tuple[str, ...] = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers")
"""What the ``train`` extra installs (``tokenizers`` comes with transformers)."""

TRAIN_EXTRA_HINT = "needs the train extra: pip install -e '.[train]'"


def missing_train_packages(packages: tuple[str, ...] = TRAIN_PACKAGES) -> list[str]:
    """The packages of ``packages`` that are not importable here (found without importing them)."""
    return [p for p in packages if importlib.util.find_spec(p) is None]


_LAZY = {
    "TrainPlan": "agent_rl_sandbox.trainers._plan",
    "PlanError": "agent_rl_sandbox.trainers._plan",
    "plan_from_job": "agent_rl_sandbox.trainers._plan",
    "RunPaths": "agent_rl_sandbox.trainers._run",
    "TrainingRefused": "agent_rl_sandbox.trainers._run",
    "run_training": "agent_rl_sandbox.trainers._run",
    "build_trainer": "agent_rl_sandbox.trainers._run",
    "DataError": "agent_rl_sandbox.trainers._data",
    "PreflightError": "agent_rl_sandbox.trainers._data",
    "preflight": "agent_rl_sandbox.trainers._data",
    "read_rows": "agent_rl_sandbox.trainers._data",
    "NeedsGpuError": "agent_rl_sandbox.trainers._gpu",
    "load_model": "agent_rl_sandbox.trainers._load",
    "build_tiny_model": "agent_rl_sandbox.trainers.tiny_model",
    "load_tiny_model": "agent_rl_sandbox.trainers.tiny_model",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TRAIN_EXTRA_HINT", "TRAIN_PACKAGES", "missing_train_packages", *_LAZY]

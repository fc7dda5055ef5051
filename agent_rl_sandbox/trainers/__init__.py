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
"""

from __future__ import annotations

import importlib.util

TRAIN_PACKAGES: tuple[str, ...] = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers")
"""What the ``train`` extra installs (``tokenizers`` comes with transformers)."""

TRAIN_EXTRA_HINT = "needs the train extra: pip install -e '.[train]'"


def missing_train_packages(packages: tuple[str, ...] = TRAIN_PACKAGES) -> list[str]:
    """The packages of ``packages`` that are not importable here (found without importing them)."""
    return [p for p in packages if importlib.util.find_spec(p) is None]


__all__ = ["TRAIN_EXTRA_HINT", "TRAIN_PACKAGES", "missing_train_packages"]

"""A training plan: everything one run needs, resolved from a job document, before any heavy import.

:func:`plan_from_job` reads the ``job.json`` the worker wrote (``spec``, ``dataset``) and resolves,
in this order (later wins):

1. the route recommendation for the trainer (:func:`agent_rl_sandbox.tools.routes.hyperparameters`
   for the dataset's row count): rank, alpha, learning rate, batch, accumulation, beta, ...;
2. ``spec.adapter`` fields present in the document (``kind``, ``rank``, ``alpha``,
   ``target_modules``, ``learning_rate``; a canonical spec always carries them);
3. ``spec.hyperparameters``: only the names in :data:`KNOWN_HYPERPARAMETERS` for the trainer. An
   unknown name, or one the adapter owns (``lora_r``, ``learning_rate``...), is refused with
   :class:`PlanError` saying what to set instead (the style of TRL's ``__post_init__`` messages).

``spec.caps`` become hard limits: at most ``max_steps`` optimizer steps, and training stops (and
still saves the adapter) when ``timeout_s`` minus a save margin has passed.

Pure Python: no torch, so the plan and its refusals are testable and printable on a light install.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.jobs import ADAPTER_OWNED_HYPERPARAMETERS as _ADAPTER_OWNED
from agent_rl_sandbox.schemas.jobs import KNOWN_HYPERPARAMETERS

TRAINERS = ("sft", "dpo", "kto", "grpo", "agentic_grpo")


# KNOWN_HYPERPARAMETERS / _ADAPTER_OWNED: one list in schemas/jobs.py, which training_request checks at
# request time too (tools/ cannot import trainers/).
SAVE_MARGIN_S = 30.0
"""Seconds kept free before ``caps.timeout_s`` so the adapter can still be saved (at most a tenth
of the timeout for short timeouts)."""


class PlanError(ValueError):
    """The job cannot be planned; the message names the field and what to set instead."""


@dataclass(frozen=True)
class TrainPlan:
    """One resolved training run. ``hyperparameters`` holds trainer arguments only (no adapter keys)."""

    job_id: str
    trainer: str
    base_model: str
    dataset_path: str
    adapter_kind: str = "lora"
    rank: int = 16
    alpha: int = 32
    target_modules: str | list[str] = "all-linear"
    learning_rate: float = 1e-5
    max_steps_cap: int = 200
    timeout_s: float = 3600.0
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    dataset_sha256: str | None = None
    """The approved content hash (``job.json`` ``dataset.sha256``); the rows read must match it."""
    init_adapter: str | None = None
    """An adapter folder to continue training (Python API and the SFT warm-up; never from a spec)."""
    """Where each value came from: ``route``, ``spec.adapter`` or ``spec.hyperparameters``."""

    @property
    def train_seconds(self) -> float:
        """Wall seconds training may take before it stops to save: ``timeout_s`` minus the margin."""
        return max(1.0, self.timeout_s - min(SAVE_MARGIN_S, self.timeout_s / 10))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_rows(path: str | Path) -> int:
    """Non-blank lines of a JSONL file (0 when unreadable: the route then assumes a small dataset)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def _coerce(name: str, value: Any, want: type) -> Any:
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if (want is bool) != isinstance(value, bool):  # a bool where a number is wanted, or the reverse
        raise PlanError(f"spec.hyperparameters.{name} must be {want.__name__}, got {value!r}. Next step: fix its type")
    if not isinstance(value, want):
        raise PlanError(f"spec.hyperparameters.{name} must be {want.__name__}, got {value!r}. Next step: fix its type")
    return value


def plan_from_job(doc: dict[str, Any]) -> TrainPlan:
    """Resolve the plan of a job document (see the module docstring). Raises :class:`PlanError`."""
    from agent_rl_sandbox.tools.routes import hyperparameters as route_hyperparameters

    spec = doc.get("spec") or {}
    trainer = spec.get("trainer")
    if trainer not in TRAINERS:
        raise PlanError(f"spec.trainer {trainer!r} is not one of {', '.join(TRAINERS)}. Next step: fix the spec")
    ds = doc.get("dataset") or spec.get("dataset") or {}
    dataset_path = ds.get("path")
    if not isinstance(dataset_path, str) or not dataset_path:
        raise PlanError("job.json names no dataset path. Next step: run the validate stage first (it names the file)")
    base = spec.get("base_model")
    if not isinstance(base, str) or not base:
        raise PlanError("spec.base_model is missing. Next step: name a local model folder")

    sources: dict[str, str] = {}
    route = route_hyperparameters(trainer, count_rows(dataset_path))  # type: ignore[arg-type]
    values: dict[str, Any] = {
        "rank": route.get("lora_r", 16),
        "alpha": route.get("lora_alpha", 32),
        "learning_rate": route.get("learning_rate", 1e-5),
        "target_modules": route.get("target_modules", "all-linear"),
        "adapter_kind": "lora",
    }
    sources.update(dict.fromkeys(values, "route"))
    hp: dict[str, Any] = {
        k: v for k, v in route.items() if k not in {"lora_r", "lora_alpha", "learning_rate", "target_modules"}
    }
    known = KNOWN_HYPERPARAMETERS[trainer]
    hp = {k: v for k, v in hp.items() if k in known}
    sources.update(dict.fromkeys(hp, "route"))

    adapter = spec.get("adapter") or {}
    for src, dst in (
        ("kind", "adapter_kind"),
        ("rank", "rank"),
        ("alpha", "alpha"),
        ("target_modules", "target_modules"),
        ("learning_rate", "learning_rate"),
    ):
        if src in adapter:
            values[dst] = adapter[src]
            sources[dst] = "spec.adapter"
    if values["adapter_kind"] == "full":
        raise PlanError(
            "adapter.kind 'full' is not supported by these trainers (full fine-tuning of the base model). "
            "Next step: use adapter.kind 'lora' (or 'qlora' on a CUDA host)"
        )

    for name, value in (spec.get("hyperparameters") or {}).items():
        if name in _ADAPTER_OWNED:
            raise PlanError(
                f"spec.hyperparameters.{name} is set by the adapter, not here. Next step: set {_ADAPTER_OWNED[name]} instead"
            )
        if name not in known:
            raise PlanError(
                f"spec.hyperparameters.{name} is not a {trainer} hyperparameter this trainer knows. "
                f"Next step: use one of {', '.join(sorted(known))}"
            )
        hp[name] = _coerce(name, value, known[name])
        sources[name] = "spec.hyperparameters"

    caps = spec.get("caps") or {}
    return TrainPlan(
        job_id=str(doc.get("job_id") or "local"),
        trainer=trainer,
        base_model=base,
        dataset_path=dataset_path,
        dataset_sha256=ds.get("sha256") if isinstance(ds.get("sha256"), str) else None,
        max_steps_cap=int(caps.get("max_steps", 200)),
        timeout_s=float(caps.get("timeout_s", 3600)),
        hyperparameters=hp,
        sources=sources,
        **values,
    )


def read_job(path: str | Path) -> dict[str, Any]:
    """``job.json`` as a dict. Raises :class:`PlanError` when it is unreadable or not an object."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlanError(f"cannot read {path}: {exc}. Next step: run the stage from the worker") from exc
    if not isinstance(doc, dict):
        raise PlanError(f"{path} is not a JSON object. Next step: run the stage from the worker")
    return doc

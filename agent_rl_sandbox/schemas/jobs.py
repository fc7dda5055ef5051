"""Wire models of training jobs: the spec an agent requests, the states a job moves through, and the
decisions a human takes.

A job spec is what ``training_request`` stores and what a human approves: the approval is bound to
the hash of the spec's canonical form (:func:`agent_rl_sandbox.tools.jobs.spec_hash`), so a spec
that changes after approval never runs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Trainer = Literal["sft", "dpo", "kto", "grpo", "agentic_grpo"]

# -- accepted hyperparameters (one list: training_request checks it, trainers/_plan.py applies it) --
_COMMON_HYPERPARAMETERS = {
    "per_device_train_batch_size": int,
    "gradient_accumulation_steps": int,
    "num_train_epochs": float,
    "max_steps": int,
    "max_length": int,
    "lora_dropout": float,
    "logging_steps": int,
    "seed": int,
    "warmup_ratio": float,
    "weight_decay": float,
    "lr_scheduler_type": str,
    "max_grad_norm": float,
    "gradient_checkpointing": bool,
}
KNOWN_HYPERPARAMETERS: dict[str, dict[str, type]] = {
    "sft": {**_COMMON_HYPERPARAMETERS, "assistant_only_loss": bool, "completion_only_loss": bool, "packing": bool},
    "dpo": {**_COMMON_HYPERPARAMETERS, "beta": float, "loss_type": str},
    "kto": {**_COMMON_HYPERPARAMETERS, "beta": float, "desirable_weight": float, "undesirable_weight": float},
    "grpo": {
        **_COMMON_HYPERPARAMETERS,
        "beta": float,
        "num_generations": int,
        "max_completion_length": int,
        "temperature": float,
        "scale_rewards": str,
        "use_vllm": bool,
        "vllm_mode": str,
        "reward": str,
        "max_tool_calling_iterations": int,
        "zero_std_patience": int,
        "sft_warmup_steps": int,
        "sft_learning_rate": float,
    },
}
"""Hyperparameter names each trainer accepts from ``spec.hyperparameters``, with their types.
``reward`` (GRPO) names a built-in reward function (``trainers/_rewards.py``); ``zero_std_patience`` is how
many logged steps in a row every group may have zero reward variance before the run is refused;
``sft_warmup_steps`` (GRPO) first trains the same LoRA adapter with SFT on the job's conversational
rows for that many steps (at ``sft_learning_rate``, default 2e-4), then runs GRPO from it on the
rows' prompts (a random model never earns a tool-call reward; STACK.md)."""
KNOWN_HYPERPARAMETERS["agentic_grpo"] = dict(KNOWN_HYPERPARAMETERS["grpo"])

ADAPTER_OWNED_HYPERPARAMETERS = {
    "lora_r": "adapter.rank",
    "r": "adapter.rank",
    "lora_alpha": "adapter.alpha",
    "learning_rate": "adapter.learning_rate",
    "target_modules": "adapter.target_modules",
}
"""Names that belong to ``spec.adapter``, not ``spec.hyperparameters``, and the field to set instead."""


def hyperparameter_problem(trainer: str, name: str, value: Any) -> tuple[str, str] | None:
    """Why ``spec.hyperparameters.<name> = value`` is refused for ``trainer``, as ``(problem, next
    step)``, or ``None`` when it is accepted: a name the adapter owns, a name not in
    :data:`KNOWN_HYPERPARAMETERS` (``push_to_hub``, ``output_dir``, ``report_to``,
    ``trust_remote_code``...: the list of accepted names is in the next step), or a value of the wrong
    type (an int is accepted for a float)."""
    if name in ADAPTER_OWNED_HYPERPARAMETERS:
        return f"{name!r} is set by the adapter, not here", f"set {ADAPTER_OWNED_HYPERPARAMETERS[name]} instead"
    known = KNOWN_HYPERPARAMETERS.get(trainer, {})
    if name not in known:
        return (
            f"{name!r} is not a {trainer} hyperparameter these trainers accept",
            f"use only these names: {', '.join(sorted(known))}",
        )
    want = known[name]
    ok = (
        isinstance(value, bool)
        if want is bool
        else not isinstance(value, bool) and isinstance(value, (int, float) if want is float else want)
    )
    if not ok:
        return f"{name!r} must be {want.__name__}, got {value!r}", f"pass a {want.__name__}"
    return None


AdapterKind = Literal["lora", "qlora", "full"]

JobState = Literal[
    "awaiting_approval",
    "approved",
    "queued",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "rejected",
    "expired",
    "evaluating",
    "gate_passed",
    "gate_failed",
]
"""Where a job is:

- ``awaiting_approval``: stored and validated; waits for a human (expires after the operator's TTL).
- ``approved``: a human approved this exact spec hash.
- ``queued``: a worker may claim it.
- ``running``: a worker holds its lease and runs its stages.
- ``succeeded``: training finished; ``evaluating`` follows.
- ``failed``: a stage failed, the spec changed (``spec_changed``) or the worker was lost (``worker_lost``).
- ``cancelled``: the requester or a human cancelled it.
- ``rejected``: a human said no (or ``modify``: no, with a suggested spec).
- ``expired``: nobody approved it in time.
- ``evaluating``: the post-training eval and the gate run.
- ``gate_passed`` / ``gate_failed``: the gate's verdict; a gate-passing adapter becomes a candidate.
"""

FINAL_STATES: frozenset[str] = frozenset({"failed", "cancelled", "rejected", "expired", "gate_passed", "gate_failed"})

Decision = Literal["approve", "reject", "modify"]
"""What a human decides on a job awaiting approval (after Inspect AI's approval decisions):

- ``approve``: run this exact spec (bound to its hash).
- ``reject``: do not run it.
- ``modify``: do not run it; the note carries a suggested spec for a new request.
"""


class DatasetFile(BaseModel):
    """A dataset file under the operator's allowed data folders; the worker re-validates it and
    checks its content hash before training."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["file"] = "file"
    path: str = Field(min_length=1, max_length=4096)
    """Absolute, or relative to the server's working folder; normalised before hashing."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """Content hash, filled in at request time (a given value must match the file)."""


class StoreSelection(BaseModel):
    """Training data the worker materialises from the store with ``trajectory_export``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["store"] = "store"
    export: Literal["sft", "dpo", "kto", "grpo", "minimind_sft", "minimind_dpo", "minimind_agentic"]
    behaviour: str | None = Field(None, max_length=200)
    task_id: str | None = Field(None, max_length=200)
    min_reward: float | None = Field(None, ge=0, le=1)
    agent_name: str | None = Field(None, max_length=200)


DatasetRef = Annotated[DatasetFile | StoreSelection, Field(discriminator="kind")]


class AdapterConfig(BaseModel):
    """The adapter to train. Defaults follow TRL's "LoRA Without Regret" guide (all linear layers)."""

    model_config = ConfigDict(extra="forbid")

    kind: AdapterKind = "lora"
    rank: int = Field(16, ge=1, le=1024)
    alpha: int = Field(32, ge=1, le=4096)
    target_modules: str | list[str] = "all-linear"
    learning_rate: float = Field(1e-5, gt=0, lt=1)

    @model_validator(mode="after")
    def _full_has_no_rank(self) -> AdapterConfig:
        if self.kind == "full" and "rank" in self.model_fields_set:
            raise ValueError("adapter.rank applies to lora and qlora only; drop it for kind='full'")
        return self


class GateRef(BaseModel):
    """The eval gate and held-out suite that decide promotion."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("deploy", min_length=1, max_length=100)
    """A gate ``eval_gate`` knows (built-in ``default``/``deploy`` or the operator's gates.toml)."""
    behaviour: str = Field(min_length=1, max_length=200)
    """Its held-out variants are the suite."""


class Caps(BaseModel):
    """Budget caps; each must be within the operator's limits."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(200, ge=1)
    timeout_s: int = Field(3600, ge=1)
    """Wall time of the whole job."""
    max_gpu_hours: float = Field(1.0, ge=0)


class JobSpec(BaseModel):
    """What an agent asks to train. Validated before it is stored (``training_request``)."""

    model_config = ConfigDict(extra="forbid", title="JobSpec")

    route: Literal["sft", "dpo", "kto", "grpo", "agentic_grpo", "distillation"]
    """The intervention (from ``route_recommend``)."""
    trainer: Trainer
    base_model: str = Field(min_length=1, max_length=500)
    """A local model folder, or a name the operator's model registry knows."""
    dataset: DatasetRef
    adapter: AdapterConfig = Field(default_factory=AdapterConfig)
    gate: GateRef
    caps: Caps = Field(default_factory=Caps)
    hyperparameters: dict[str, int | float | str | bool] = Field(default_factory=dict)
    """Trainer arguments beyond the adapter's (batch size, epochs, beta, num_generations, ...): only
    the names in :data:`KNOWN_HYPERPARAMETERS` for the trainer, refused at request time otherwise."""
    reason: str = Field(min_length=1, max_length=2000)
    """Why the requester wants this (shown to the approving human)."""


# -- MCP tool inputs and outputs (training_request / training_status / training_list / training_cancel) --

JOB_ID_PATTERN = r"^job_[0-9a-f]{12}$"


class JobEventView(BaseModel):
    """One transition of a job (the append-only event log)."""

    at: str
    actor: Literal["agent", "human", "worker", "system"]
    who: str
    from_state: JobState | None
    """``None`` for the job's creation."""
    to_state: JobState
    reason: str


class JobView(BaseModel):
    """A job as its requester (and the human CLI) sees it."""

    job_id: str
    state: JobState
    requester: str
    trainer: Trainer
    behaviour: str
    spec_hash: str
    """SHA-256 of the canonical spec; a human's approval is bound to it."""
    created_at: str
    updated_at: str
    expires_at: str
    """When the request expires if nobody approved it."""
    reason: str | None = None
    """The reason of the latest transition (``spec_changed``, ``worker_lost``, a stage failure...)."""
    decided_by: str | None = None
    decided_at: str | None = None
    stage: str | None = None
    progress: float | None = None
    metrics: dict[str, object] | None = None
    """The last metrics the worker reported."""
    workspace: str | None = None
    logs: dict[str, str] = Field(default_factory=dict)
    """Files of the job's workspace that exist (``run.log``, ``train.log``, ``metrics.jsonl``,
    ``scores.json``, plots), by name."""


class TrainingRequestOutput(BaseModel):
    """A stored request: it waits for a human (``agent-rl-sandbox jobs approve JOB --hash H``)."""

    job: JobView
    spec: dict[str, object]
    """The canonical spec stored (normalised paths, dataset content hash)."""
    dataset_validation: dict[str, object] | None = None
    """Summary of the dataset validation (a file dataset), with the full report's path; for a store
    selection ``{"store_rows_at_request": N}``, the rows it exported when requested."""
    next_step: str


class TrainingStatusInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(pattern=JOB_ID_PATTERN, description="The job id from training_request or training_list.")


class TrainingStatusOutput(BaseModel):
    job: JobView
    events: list[JobEventView]
    """Every transition, oldest first."""


class TrainingListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: JobState | None = Field(None, description="Only jobs in this state.")
    behaviour: str | None = Field(None, max_length=200, description="Only jobs gated on this behaviour.")
    limit: int = Field(20, ge=1, le=100, description="Jobs per page.")
    offset: int = Field(0, ge=0, description="Jobs to skip (newest first).")


class TrainingListOutput(BaseModel):
    jobs: list[JobView]
    total: int
    """Jobs matching the filters (all pages)."""
    next_offset: int | None
    """Pass as ``offset`` for the next page; ``None`` on the last."""


class TrainingCancelInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(pattern=JOB_ID_PATTERN, description="Your job's id.")
    reason: str = Field("cancelled by its requester", min_length=1, max_length=500)


class TrainingCancelOutput(BaseModel):
    job: JobView
    note: str

"""Wire models of the training-route recommendation (``route_recommend``, ``agent-rl-sandbox route``).

A recommendation answers: should a behaviour be a rule or hook, a prompt, SFT, DPO/KTO, GRPO or
agentic multi-turn GRPO (or distillation from a teacher); with LoRA, QLoRA or full fine-tuning; with
which starting hyperparameters; and what is still missing before training is worth starting. Every
reason names the signal and the value that drove it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Intervention = Literal["rule", "prompt", "sft", "dpo", "kto", "grpo", "agentic_grpo", "distillation"]
"""The ladder, lightest first: ``rule`` (a script or hook), ``prompt`` (a prompt or skill), ``sft``,
``dpo``/``kto`` (preferences), ``grpo`` (RL with a verifiable reward), ``agentic_grpo`` (multi-turn
tool RL); ``distillation`` (SFT on a teacher's trajectories) when a teacher is given."""
Trainer = Literal["sft", "dpo", "kto", "grpo", "agentic_grpo"]
AdapterKind = Literal["lora", "qlora", "full"]
SignalSource = Literal["input", "store", "tasks", "model_folder", "default"]
"""Where a signal's value came from; ``model_folder``: a local ``base_model`` folder's safetensors
headers or ``config.json`` (the CLI ``route`` only)."""


class VariantCounts(BaseModel):
    """Finished attempts on one task variant."""

    model_config = ConfigDict(extra="forbid")

    passed: int = Field(0, ge=0)
    failed: int = Field(0, ge=0)
    split: Literal["train", "heldout"] = "train"
    zero_variance: bool | None = None
    """All attempts got the same reward (``None``: unknown, e.g. given as counts only)."""


class RouteSignals(BaseModel):
    """Evidence about a behaviour. Every field is optional; what is not given is derived from the
    store when a behaviour or task id is given, or left unknown (and said so in the reasons)."""

    model_config = ConfigDict(extra="forbid")

    fixed_rule: bool | None = None
    """The desired behaviour is the same action in every state (then a rule, script or hook does it)."""
    demonstrations: int | None = Field(None, ge=0)
    """Passing trajectories (or demonstrations) on train variants."""
    passing: int | None = Field(None, ge=0)
    """Passing attempts on train variants (the base agent's)."""
    failing: int | None = Field(None, ge=0)
    """Failing attempts on train variants."""
    variants: dict[str, VariantCounts] | None = None
    """Per task variant: passed and failed counts (and split)."""
    preference_pairs: int | None = Field(None, ge=0)
    """DPO pairs available (pass vs fail on the same variant)."""
    kto_rows: int | None = Field(None, ge=0)
    """Labelled (unpaired) rows available for KTO."""
    zero_variance_fraction: float | None = Field(None, ge=0, le=1)
    """Share of attempt groups (same variant, >= 2 attempts) whose rewards are all equal."""
    verifiable_reward: bool | None = None
    """A programmatic reward exists (a hidden verifier, a checker)."""
    multi_turn_tool_use: bool | None = None
    """An episode is several tool calls with observations in between."""
    teacher_model: str | None = Field(None, max_length=200)
    """A stronger model whose trajectories may be distilled."""
    heldout_attempts: int | None = Field(None, ge=0)
    """Finished attempts on held-out variants (what an eval gate would measure)."""
    base_model_params: str | None = Field(None, max_length=32, examples=["7B", "1.5B", "350M", "158K"])
    """Parameter count with a unit: K, M, B or T (``7B``)."""
    num_layers: int | None = Field(None, gt=0)
    hidden_size: int | None = Field(None, gt=0)
    num_heads: int | None = Field(None, gt=0)
    intermediate_size: int | None = Field(None, gt=0)
    vocab_size: int | None = Field(None, gt=0)
    context_length: int | None = Field(None, gt=0)
    """Training sequence length in tokens (prompt + completion)."""
    batch_size: int | None = Field(None, gt=0)
    """Per-device micro-batch."""
    gpu: str | None = Field(None, max_length=64)
    """GPU type (``H100``, ``A10G``: a name of ``tools.routes.KNOWN_GPU_GIB``, else refused unless
    ``gpu_memory_gb`` is given), or ``none``/``cpu`` for no GPU."""
    gpu_memory_gb: float | None = Field(None, gt=0)
    """Memory of one GPU in GB (GiB)."""
    time_budget_hours: float | None = Field(None, gt=0)


class RouteRecommendInput(BaseModel):
    """What ``route_recommend`` takes: a behaviour or task id (signals derived from the store)
    and/or explicit signals (which win over derived ones)."""

    model_config = ConfigDict(extra="forbid")

    behaviour: str | None = Field(None, max_length=200)
    task_id: str | None = Field(None, max_length=200)
    agent_name: str | None = Field(None, max_length=200)
    """Count only this agent's trajectories (the base agent's)."""
    base_model: str | None = Field(None, max_length=500)
    """The model to adapt (a local path or a name the operator's registry knows); copied into the
    job spec draft."""
    signals: RouteSignals | None = None
    """Explicit evidence; each given field wins over the derived value."""


class Reason(BaseModel):
    """One rule of the decision table that fired, with the signal behind it."""

    rule: str
    """Rule id in ``tools/routes/_table.py``."""
    text: str
    signal: str
    value: Any = None
    source: str
    """Where the rule comes from (a paper, TRL's docs, the design)."""


class Alternative(BaseModel):
    intervention: Intervention
    rank: int
    why: str


class MemoryRow(BaseModel):
    """Training-memory estimate for one method (GiB)."""

    method: AdapterKind
    trainable_params: int
    weights_gib: float
    gradients_and_optimizer_gib: float
    activations_gib: float
    logits_gib: float
    total_gib: float
    fits: bool | None = None


class ResolvedSignal(BaseModel):
    value: Any = None
    source: SignalSource


class RouteRecommendation(BaseModel):
    """The recommendation. ``train_now`` is false when the route is not training (rule, prompt) or
    when a prerequisite is missing (listed in ``prerequisites_missing``)."""

    intervention: Intervention
    train_now: bool
    trainer: Trainer | None = None
    adapter: AdapterKind | None = None
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    prerequisites_missing: list[str] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    reasons: list[Reason] = Field(default_factory=list)
    signals: dict[str, ResolvedSignal] = Field(default_factory=dict)
    memory: list[MemoryRow] = Field(default_factory=list)
    job_spec: dict[str, Any] | None = None
    """A valid :class:`~agent_rl_sandbox.schemas.jobs.JobSpec` (as JSON) built from this
    recommendation, ready for ``training_request``: trainer, adapter, hyperparameters, the
    behaviour's train split from the store, its held-out variants behind the ``deploy`` gate. Only
    when a trained route fits, a ``base_model`` was given and the behaviour is known."""

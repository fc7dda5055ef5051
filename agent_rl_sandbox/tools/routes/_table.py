"""The decision table behind :func:`~agent_rl_sandbox.tools.routes.recommend`: every rule, threshold
and default hyperparameter in one place, each with its source.

Sources cited below:

- **design**: ``DESIGN.md`` principle 2, "the lightest intervention that passes": rule, script or
  hook -> prompt or skill -> SFT -> preference (DPO/KTO) -> RL with a verifiable reward (GRPO,
  agentic) -> QLoRA when memory-bound.
- **trl-datasets**: TRL's "Dataset formats and types" page: SFT trains on language-modelling,
  prompt-completion or conversational rows; DPO on preference rows (prompt, chosen, rejected);
  KTO on unpaired preference rows (prompt, completion, label); GRPO on prompt-only rows.
- **lora-without-regret**: TRL's "LoRA Without Regret" guide (after Schulman et al. 2025): LoRA on
  all linear layers (``target_modules="all-linear"``); rank 256 for SFT at post-training scale, 1-32
  for RL (policy gradients carry about one bit per episode); learning rate about 10x full
  fine-tuning's (1e-5 vs 1e-6 for GRPO); effective batch under 32.
- **trl-configs**: TRL 1.16's config defaults for full fine-tuning: ``SFTConfig.learning_rate``
  2e-5, ``DPOConfig``/``KTOConfig`` 1e-6 with ``beta`` 0.1, ``GRPOConfig`` 1e-6 with
  ``num_generations`` 8 and ``beta`` 0.0 (no reference model), ``max_length`` 1024.
- **grpo-variance**: Shao et al. 2024 (DeepSeekMath), GRPO's advantage is the reward minus the
  group mean, divided by the group's standard deviation: a group whose rewards are all equal gives
  every completion advantage 0 and contributes no gradient (TRL logs it as
  ``frac_reward_zero_std``).
- **qlora**: Dettmers et al. 2023: 4-bit NF4 base with LoRA adapters; bitsandbytes' 4-bit kernels
  need a CUDA GPU.
- **project**: a threshold this project chose (no paper gives one); change it here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_rl_sandbox.schemas.routes import Intervention, Trainer

SOURCES: dict[str, str] = {
    "design": "DESIGN.md principle 2 (lightest intervention that passes)",
    "trl-datasets": "TRL docs, 'Dataset formats and types' (dataset type <-> trainer)",
    "lora-without-regret": "TRL docs, 'LoRA Without Regret' (Schulman et al. 2025)",
    "trl-configs": "TRL 1.16 config defaults (SFTConfig, DPOConfig, KTOConfig, GRPOConfig)",
    "grpo-variance": "Shao et al. 2024 (DeepSeekMath), GRPO group-relative advantage",
    "qlora": "Dettmers et al. 2023 (QLoRA); bitsandbytes 4-bit needs CUDA",
    "korthikanti": "Korthikanti et al. 2022, activation memory per layer",
    "project": "agent-rl-sandbox threshold (no external source)",
}


@dataclass(frozen=True)
class Thresholds:
    """The numbers the rules compare signals against."""

    min_sft_demos: int = 16
    """Passing trajectories needed before SFT is worth a run (project)."""
    min_dpo_pairs: int = 16
    """Pass/fail pairs on the same variant needed for DPO (project)."""
    min_kto_rows: int = 32
    """Labelled rows, both labels present, needed for KTO (project)."""
    prompt_pass_rate: float = 0.8
    """At or above this base pass rate, a prompt or skill closes the gap; training is overkill (project)."""
    max_zero_variance_fraction: float = 0.5
    """Above this share of zero-variance groups, GRPO wastes most of its steps (grpo-variance; the cut is project)."""
    min_attempts: int = 6
    """Finished attempts on train variants before a pass rate or reward variance is trusted (project)."""
    min_heldout_attempts: int = 4
    """Attempts on held-out variants needed for an eval gate to say anything (project)."""
    max_cpu_params: int = 100_000_000
    """Largest model this project considers trainable without a GPU (project)."""
    post_training_scale_rows: int = 10_000
    """Dataset size from which SFT wants LoRA rank 256 (lora-without-regret; the cut is project)."""


THRESHOLDS = Thresholds()

LADDER: tuple[Intervention, ...] = ("rule", "prompt", "sft", "dpo", "kto", "grpo", "agentic_grpo", "distillation")
"""Lightest first (design); distillation sits beside SFT (it is SFT on a teacher's trajectories)."""


@dataclass(frozen=True)
class Rule:
    """One row of the table: what it decides and where that comes from."""

    id: str
    says: str
    source: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule("fixed-rule", "the same action in every state: write a rule, script or hook, do not train", "design"),
        Rule("base-passes", "the base agent already passes most attempts: a prompt or skill, not training", "design"),
        Rule(
            "rl-verifiable",
            "a verifiable reward with reward variance: RL optimises the verified outcome",
            "grpo-variance",
        ),
        Rule("rl-multi-turn", "multi-turn tool use: agentic GRPO over real sandbox episodes", "trl-datasets"),
        Rule(
            "rl-no-variance",
            "every group has equal rewards: GRPO would learn nothing (all advantages 0)",
            "grpo-variance",
        ),
        Rule(
            "rl-never-passes",
            "the base agent never passes: RL has no success to reinforce; imitate first",
            "grpo-variance",
        ),
        Rule("dpo-pairs", "pass/fail pairs on the same variant: DPO uses the failures SFT ignores", "trl-datasets"),
        Rule("kto-rows", "labelled but unpaired rows: KTO", "trl-datasets"),
        Rule("sft-demos", "enough passing demonstrations: SFT imitates them", "trl-datasets"),
        Rule(
            "distill-teacher",
            "a teacher model can produce the demonstrations: distillation (SFT on its trajectories)",
            "design",
        ),
        Rule("not-enough-data", "too few demonstrations for any trainer: collect more before training", "project"),
        Rule("few-attempts", "too few attempts to trust the measured pass rate and variance", "project"),
        Rule("gate-heldout", "held-out attempts decide promotion; too few and the gate cannot say", "project"),
        Rule(
            "adapter-lora",
            "LoRA on all linear layers matches full fine-tuning at a fraction of the memory",
            "lora-without-regret",
        ),
        Rule("adapter-qlora", "the bf16 base does not fit for LoRA but a 4-bit base does: QLoRA (CUDA only)", "qlora"),
        Rule(
            "adapter-full",
            "no adapter fits: full fine-tuning would not either; a smaller model or more GPUs",
            "korthikanti",
        ),
        Rule("no-gpu", "no GPU: CPU training only for small models", "project"),
    )
}

TRAINER_FOR: dict[Intervention, Trainer] = {
    "sft": "sft",
    "distillation": "sft",
    "dpo": "dpo",
    "kto": "kto",
    "grpo": "grpo",
    "agentic_grpo": "agentic_grpo",
}
"""The TRL trainer each trained intervention runs (trl-datasets)."""

EXPORT_FORMAT_FOR: dict[Trainer, str] = {
    "sft": "sft",
    "dpo": "dpo",
    "kto": "kto",
    "grpo": "grpo",
    "agentic_grpo": "grpo",
}
"""The ``trajectory_export`` format whose rows the trainer takes (trl-datasets): conversational SFT
rows, preference rows, unpaired preference rows, prompt-only rows (agentic GRPO resets a sandbox
per prompt row)."""


def hyperparameters(trainer: Trainer, dataset_rows: int) -> dict[str, Any]:
    """Starting hyperparameters for a LoRA run of ``trainer`` (lora-without-regret, trl-configs)."""
    common: dict[str, Any] = {
        "target_modules": "all-linear",
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": 8,  # effective batch 8, under 32
        "lora_dropout": 0.0,
    }
    if trainer == "sft":
        rank = 256 if dataset_rows >= THRESHOLDS.post_training_scale_rows else 64
        return {
            **common,
            "lora_r": rank,
            "lora_alpha": 16,
            "learning_rate": 2e-4,
            "num_train_epochs": 1,
            "max_length": 1024,
        }
    if trainer in ("dpo", "kto"):
        return {**common, "lora_r": 64, "lora_alpha": 16, "learning_rate": 1e-5, "beta": 0.1, "max_length": 1024}
    return {
        **common,
        "lora_r": 16,
        "lora_alpha": 32,
        "learning_rate": 1e-5,
        "beta": 0.0,
        "num_generations": 8,
        "max_completion_length": 1024,
    }

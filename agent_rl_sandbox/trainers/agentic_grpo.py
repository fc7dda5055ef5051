"""Agentic GRPO over real sandboxes: TRL's ``GRPOTrainer`` with the sandbox as its
``environment_factory`` (:mod:`.environment`), LoRA through PEFT.

Each training row names a task variant (``{"prompt": [{"role": "user", "content": ""}],
"task_id": ...}``); TRL resets a pooled environment with the row, the model plays the episode with
the sandbox tools (multi-turn, up to ``max_tool_calling_iterations`` calls, all turns within
``max_completion_length`` tokens), and the environment's ``get_reward()`` finishes it and returns
the hidden verifier's reward. Every rollout is a trajectory in the store (agent ``grpo:<job id>``).

Guards, each a clear error rather than a silent no-op run:

- **tool_mask in force**: after every generation batch the trainer checks that TRL produced a
  ``tool_mask`` whenever a tool was called, and that it masks tool-result tokens out of the loss
  (``tools/masked_tokens`` is logged); a batch with tool calls but no mask raises
  :class:`AgenticGRPOError`.
- **zero reward variance**: ``frac_reward_zero_std`` (the share of groups whose rollouts all got the
  same reward, i.e. zero advantage) is logged each step; when it is 1.0 for
  ``zero_variance_patience`` consecutive steps, training stops and :class:`AgenticGRPOError`
  names the problem and the fix (a warm-up SFT, a harder/easier variant mix, a higher temperature).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.trainers.environment import environment_class

log = logging.getLogger(__name__)


class AgenticGRPOError(RuntimeError):
    """Agentic GRPO cannot go on (no reward variance, tool mask missing); the message says why and what to do."""


@dataclass
class AgenticGRPOResult:
    """What a run did: steps, the adapter folder, per-step metrics, the rollouts' trajectories."""

    steps: int
    adapter_dir: str
    metrics: list[dict[str, Any]] = field(default_factory=list)
    rollouts: int = 0
    masked_tool_tokens: int = 0


def _callbacks(metrics: list[dict[str, Any]], metrics_path: Path | None, patience: int) -> list[Any]:
    from transformers import TrainerCallback

    class _Guard(TrainerCallback):
        zero_steps = 0
        tripped = False

        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001 - transformers' signature
            if not logs or "frac_reward_zero_std" not in logs:
                return
            row = {"step": state.global_step, **{k: v for k, v in logs.items() if isinstance(v, int | float)}}
            metrics.append(row)
            if metrics_path is not None:
                with metrics_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
            zero = logs["frac_reward_zero_std"]
            self.zero_steps = self.zero_steps + 1 if (zero is not None and not math.isnan(zero) and zero >= 1.0) else 0
            if self.zero_steps >= patience:
                self.tripped = True
                control.should_training_stop = True

    return [_Guard()]


def run_agentic_grpo(
    *,
    services: Any,
    model_dir: str | Path,
    output_dir: str | Path,
    task_ids: list[str],
    job_id: str = "local",
    adapter_dir: str | Path | None = None,
    tools: tuple[str, ...] = ("sandbox_exec", "sandbox_finish"),
    max_steps: int = 4,
    num_generations: int = 4,
    learning_rate: float = 1e-4,
    lora_rank: int = 16,
    lora_alpha: int = 32,
    temperature: float = 1.0,
    max_completion_length: int = 256,
    max_tool_calling_iterations: int = 4,
    zero_variance_patience: int = 3,
    metrics_path: str | Path | None = None,
    seed: int = 0,
) -> AgenticGRPOResult:
    """Train a LoRA adapter on ``model_dir`` with agentic GRPO over ``task_ids`` (train variants;
    rows cycle through them, ``num_generations`` rollouts each per step) and save it to
    ``output_dir``. ``adapter_dir`` continues from an existing adapter (e.g. the SFT warm-up's).

    Raises :class:`AgenticGRPOError` when every group has zero reward variance for
    ``zero_variance_patience`` logged steps, or when TRL's tool mask is missing; ``ValueError`` for
    an empty task list."""
    if not task_ids:
        raise ValueError("agentic GRPO needs at least one task variant (task_ids is empty)")
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from peft import LoraConfig, PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(seed)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    mpath = Path(metrics_path) if metrics_path is not None else None
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model: Any = AutoModelForCausalLM.from_pretrained(str(model_dir))
    peft_config = None
    if adapter_dir is not None:
        model = PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True)
    else:
        peft_config = LoraConfig(r=lora_rank, lora_alpha=lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM")
    rows = [
        {"prompt": [{"role": "user", "content": ""}], "task_id": task_ids[i % len(task_ids)]} for i in range(max_steps)
    ]
    env_cls = environment_class(services, tools=tools, agent_name=f"grpo:{job_id}")
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        report_to=[],
        gradient_checkpointing=False,
        per_device_train_batch_size=num_generations,
        num_generations=num_generations,
        max_steps=max_steps,
        learning_rate=learning_rate,
        logging_steps=1,
        save_strategy="no",
        beta=0.0,
        temperature=temperature,
        max_completion_length=max_completion_length,
        max_tool_calling_iterations=max_tool_calling_iterations,
        seed=seed,
        dataloader_num_workers=0,
    )
    metrics: list[dict[str, Any]] = []
    callbacks = _callbacks(metrics, mpath, zero_variance_patience)
    masked = [0]

    class _Trainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):  # noqa: ANN001 - TRL's signature
            output = super()._generate_and_score_completions(inputs)
            called = self._metrics["train"].get("tools/call_frequency") or [0]
            if called[-1] and "tool_mask" not in output:
                raise AgenticGRPOError(
                    "tools were called but TRL produced no tool_mask: tool results would be trained on. "
                    "Next step: check the TRL version (1.16+) and that the tools run through environment_factory"
                )
            if "tool_mask" in output:
                m = output["tool_mask"] * output["completion_mask"]
                masked[0] += int((output["completion_mask"].sum() - m.sum()).item())
            return output

    trainer = _Trainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=peft_config,
        environment_factory=env_cls,
        callbacks=callbacks,
    )
    trainer.train()
    guard = callbacks[0]
    if guard.tripped:
        raise AgenticGRPOError(
            f"every group had zero reward variance for {zero_variance_patience} steps in a row "
            f"(frac_reward_zero_std = 1.0 at step {trainer.state.global_step}): all rollouts of a task got the same "
            "reward, so every advantage is 0 and GRPO learns nothing. Next step: warm up with SFT so some rollouts "
            "pass, raise the temperature, or mix easier and harder variants"
        )
    trainer.model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    pool = trainer._environment_pool.get(None, []) if hasattr(trainer, "_environment_pool") else []
    return AgenticGRPOResult(
        steps=trainer.state.global_step,
        adapter_dir=str(out),
        metrics=metrics,
        rollouts=sum(getattr(e, "episodes", 0) for e in pool),
        masked_tool_tokens=masked[0],
    )

"""One training run: a :class:`~._plan.TrainPlan` in, an adapter and its records out.

:func:`run_training` does, in order, and writes into ``paths`` (:class:`RunPaths`):

1. refuse CUDA-only requests on a host without CUDA before loading anything (QLoRA, ``use_vllm``);
2. load the tokenizer (with TRL's response schema where TRL knows the template), read the rows
   (:func:`~._data.read_rows`) and run the preflight (``preflight.json``; refusals raise);
3. load the base model (float32 on CPU, bf16 on CUDA; 4-bit NF4 for QLoRA) and build TRL's trainer
   with a PEFT ``LoraConfig`` (``target_modules`` default ``"all-linear"``; rank, alpha, dropout,
   learning rate from the plan) and the callbacks of :mod:`._metrics`;
4. train until the data is used up (``num_train_epochs``), ``hyperparameters.max_steps``, or a cap
   (GRPO with ``sft_warmup_steps``: an SFT run of the same adapter first, in ``warmup/``; GRPO then
   continues that adapter on the conversations' prompts);
5. save the adapter (``adapter_config.json`` + ``adapter_model.safetensors``) into the adapter
   folder, plot ``metrics.png``, write ``train_summary.json`` (plan, steps, what stopped it,
   tokens per second, final loss and reward).

``agentic_grpo`` takes its ``environment_factory`` and reward functions from
``agent_rl_sandbox.trainers.agentic.trainer_kwargs(plan, paths)`` (the sandbox environment; a dict
of ``GRPOTrainer`` keyword arguments, which may also replace the common ones such as
``train_dataset``), and is refused with a clear message while that module is absent.

Raises :class:`~._plan.PlanError`, :class:`~._data.DataError` (preflight included),
:class:`~._gpu.NeedsGpuError` or :class:`TrainingRefused` (GRPO with zero reward variance for too
long); anything else is a crash, which the stage records (:mod:`.train_stage`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_rl_sandbox.trainers._data import preflight, read_rows, to_dataset
from agent_rl_sandbox.trainers._gpu import QLORA_ON_CPU, check_vllm, cuda_available, require_cuda
from agent_rl_sandbox.trainers._plan import PlanError, TrainPlan

log = logging.getLogger(__name__)

_CONFIG_ONLY = {"reward", "zero_std_patience", "max_steps", "sft_warmup_steps", "sft_learning_rate"}
"""Plan hyperparameters that are not TRL config fields (or are applied separately)."""


class TrainingRefused(RuntimeError):
    """Training stopped because going on would not train anything (the message says why and what to do)."""


@dataclass(frozen=True)
class RunPaths:
    """Where a run writes. :meth:`in_dir` lays them out like a job workspace."""

    workspace: Path
    adapter_dir: Path
    metrics: Path
    train_log: Path

    @property
    def plot(self) -> Path:
        return self.workspace / "metrics.png"

    @property
    def preflight(self) -> Path:
        return self.workspace / "preflight.json"

    @property
    def summary(self) -> Path:
        return self.workspace / "train_summary.json"

    @property
    def error(self) -> Path:
        return self.workspace / "train_error.json"

    @classmethod
    def in_dir(cls, root: Path) -> RunPaths:
        return cls(root, root / "adapter", root / "metrics.jsonl", root / "train.log")


def lora_config(plan: TrainPlan) -> Any:
    """The PEFT ``LoraConfig`` of ``plan`` (causal LM; dropout from ``hyperparameters.lora_dropout``)."""
    from peft import LoraConfig

    return LoraConfig(
        r=plan.rank,
        lora_alpha=plan.alpha,
        target_modules=plan.target_modules,
        lora_dropout=float(plan.hyperparameters.get("lora_dropout", 0.0)),
        task_type="CAUSAL_LM",
    )


def trainer_config(plan: TrainPlan, paths: RunPaths, *, cuda: bool) -> Any:
    """The TRL config object (``SFTConfig``, ``DPOConfig``, ``KTOConfig`` or ``GRPOConfig``) of
    ``plan``: CPU-safe precision (``use_cpu``, no bf16) without CUDA, no checkpoints (the adapter
    is saved once, at the end), no reporting integrations, one log line per step by default."""
    from trl import DPOConfig, GRPOConfig, KTOConfig, SFTConfig

    cls = {"sft": SFTConfig, "dpo": DPOConfig, "kto": KTOConfig, "grpo": GRPOConfig, "agentic_grpo": GRPOConfig}
    hp = {k: v for k, v in plan.hyperparameters.items() if k not in _CONFIG_ONLY and k != "lora_dropout"}
    if plan.trainer == "sft":
        hp.setdefault("assistant_only_loss", True)
    if plan.trainer in ("grpo", "agentic_grpo"):
        hp.pop("max_length", None)
    kw: dict[str, Any] = {
        "output_dir": str(paths.workspace / "trainer_output"),
        "learning_rate": plan.learning_rate,
        "save_strategy": "no",
        "report_to": [],
        "logging_steps": 1,
        "disable_tqdm": True,
        "use_cpu": not cuda,
        "bf16": cuda,
        "dataloader_num_workers": 0,
        **hp,
    }
    if plan.trainer in ("sft", "dpo", "kto"):
        kw["include_num_input_tokens_seen"] = "non_padding"
    if "max_steps" in plan.hyperparameters:
        kw["max_steps"] = min(int(plan.hyperparameters["max_steps"]), plan.max_steps_cap)
    try:
        return cls[plan.trainer](**kw)
    except ValueError as exc:  # TRL's own checks (e.g. a generation batch not divisible by num_generations)
        first = " ".join(str(exc).split())[:400]
        raise PlanError(
            f"TRL refused the {plan.trainer} configuration: {first}. Next step: fix spec.hyperparameters"
        ) from None


def _load_model(plan: TrainPlan, *, cuda: bool) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    if plan.adapter_kind == "qlora":
        from agent_rl_sandbox.trainers._gpu import qlora_model_kwargs

        return AutoModelForCausalLM.from_pretrained(plan.base_model, **qlora_model_kwargs(cuda=cuda))
    return AutoModelForCausalLM.from_pretrained(plan.base_model, dtype=torch.bfloat16 if cuda else torch.float32)


def _tokenizer(plan: TrainPlan) -> Any:
    from transformers import AutoTokenizer
    from trl.chat_template_utils import add_response_schema

    tok = AutoTokenizer.from_pretrained(plan.base_model)
    if tok.pad_token is None:
        raise PlanError(
            f"the tokenizer of {plan.base_model} has no pad token. Next step: set one that differs from eos "
            "(agent-rl-sandbox model init-tiny builds a model that has it)"
        )
    try:
        add_response_schema(tok)
    except ValueError:  # a template TRL does not know: tool calls stay text, which plain SFT/DPO/KTO do not need
        log.info("no response schema for this chat template; tool calls are not parsed")
    return tok


def _grpo_kwargs(plan: TrainPlan, paths: RunPaths, reward_funcs: list | None) -> dict[str, Any]:
    from agent_rl_sandbox.trainers._rewards import REWARDS

    if reward_funcs is not None:
        return {"reward_funcs": reward_funcs}
    if plan.trainer == "agentic_grpo":
        try:
            from agent_rl_sandbox.trainers import agentic  # type: ignore[attr-defined]
        except ImportError:
            raise PlanError(
                "agentic_grpo jobs are not wired to the train stage yet (no agent_rl_sandbox.trainers.agentic "
                "with trainer_kwargs). Next step: use trainer grpo (with sft_warmup_steps), or run "
                "trainers.agentic_grpo.run_agentic_grpo from Python"
            ) from None
        return dict(agentic.trainer_kwargs(plan, paths))
    name = str(plan.hyperparameters.get("reward", "tool_call"))
    if name not in REWARDS:
        raise PlanError(
            f"spec.hyperparameters.reward {name!r} is not a built-in reward. Next step: use one of {', '.join(REWARDS)}"
        )
    return {"reward_funcs": [REWARDS[name]]}


def build_trainer(
    plan: TrainPlan,
    paths: RunPaths,
    *,
    cuda: bool | None = None,
    callbacks: list | None = None,
    reward_funcs: list | None = None,
) -> Any:
    """Checks, data, preflight, model and TRL trainer of ``plan`` (steps 1 to 3 of the module
    docstring), ready for ``.train()``. ``cuda`` overrides the probe; ``reward_funcs`` (Python API
    only, never from a spec) replaces GRPO's built-in reward."""
    cuda = cuda_available() if cuda is None else cuda
    if plan.adapter_kind == "qlora":
        require_cuda(QLORA_ON_CPU, cuda=cuda)
    if plan.hyperparameters.get("use_vllm"):
        check_vllm(cuda=cuda)
    from trl import DPOTrainer, GRPOTrainer, KTOTrainer, SFTTrainer

    tok = _tokenizer(plan)
    rows = read_rows(plan.dataset_path, plan.trainer, sha256=plan.dataset_sha256)
    args = trainer_config(plan, paths, cuda=cuda)
    report = preflight(
        rows,
        tok,
        plan.trainer,
        max_length=getattr(args, "max_length", None) if plan.trainer not in ("grpo", "agentic_grpo") else None,
        assistant_only_loss=bool(getattr(args, "assistant_only_loss", True)),
    )
    paths.workspace.mkdir(parents=True, exist_ok=True)
    paths.preflight.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    log.info("%s", report.summary())
    dataset = to_dataset(rows)
    model = _load_model(plan, cuda=cuda)
    peft_config = lora_config(plan)
    if plan.init_adapter:  # continue this adapter (the SFT warm-up's) instead of a fresh LoRA
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, plan.init_adapter, is_trainable=True)
        peft_config = None
    common: dict[str, Any] = {
        "model": model,
        "args": args,
        "train_dataset": dataset,
        "processing_class": tok,
        "peft_config": peft_config,
        "callbacks": callbacks or [],
    }
    if plan.trainer == "sft":
        return SFTTrainer(**common)
    if plan.trainer == "dpo":
        return DPOTrainer(**common)
    if plan.trainer == "kto":
        return KTOTrainer(**common)
    return GRPOTrainer(**{**common, **_grpo_kwargs(plan, paths, reward_funcs)})  # agentic may replace e.g. the dataset


def _sft_warmup(plan: TrainPlan, paths: RunPaths, *, cuda: bool | None) -> tuple[TrainPlan, dict[str, Any]]:
    """The SFT warm-up of a GRPO plan (``sft_warmup_steps``): SFT with the same LoRA settings on the
    job's conversational rows, in ``<workspace>/warmup/`` (its own metrics, plot, adapter), then the
    GRPO plan that continues that adapter on the rows' prompts (``warmup/grpo_prompts.jsonl``)."""
    from dataclasses import replace

    from agent_rl_sandbox.trainers._data import prompts_from_conversations
    from agent_rl_sandbox.trainers._plan import KNOWN_HYPERPARAMETERS

    hp = plan.hyperparameters
    steps = min(int(hp["sft_warmup_steps"]), plan.max_steps_cap)
    sft_hp = {k: v for k, v in hp.items() if k in KNOWN_HYPERPARAMETERS["sft"] and k not in ("max_steps", "beta")}
    sft_plan = replace(
        plan,
        trainer="sft",
        learning_rate=float(hp.get("sft_learning_rate", 2e-4)),
        hyperparameters={**sft_hp, "max_steps": steps},
        sources={**plan.sources, "warmup": f"sft_warmup_steps={steps}"},
    )
    warm_paths = RunPaths.in_dir(paths.workspace / "warmup")
    log.info("SFT warm-up: %d steps before %s", steps, plan.trainer)
    started = time.monotonic()
    summary = run_training(sft_plan, warm_paths, cuda=cuda)
    spent = time.monotonic() - started
    prompts = prompts_from_conversations(read_rows(plan.dataset_path, "sft", sha256=plan.dataset_sha256))
    prompt_file = warm_paths.workspace / "grpo_prompts.jsonl"
    text = "".join(json.dumps({k: v for k, v in r.items() if k != "_line"}) + "\n" for r in prompts)
    prompt_file.write_text(text, encoding="utf-8")
    grpo_hp = {k: v for k, v in hp.items() if k not in ("sft_warmup_steps", "sft_learning_rate")}
    grpo = replace(  # the caps hold for the whole job: the warm-up's steps and seconds count against them
        plan,
        dataset_path=str(prompt_file),
        dataset_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        init_adapter=str(warm_paths.adapter_dir),
        hyperparameters=grpo_hp,
        max_steps_cap=max(1, plan.max_steps_cap - int(summary.get("steps") or 0)),
        timeout_s=max(1.0, plan.timeout_s - spent),
    )
    return grpo, {
        "steps": summary.get("steps"),
        "final_loss": summary.get("final_loss"),
        "workspace": str(warm_paths.workspace),
    }


def run_training(
    plan: TrainPlan, paths: RunPaths, *, cuda: bool | None = None, reward_funcs: list | None = None
) -> dict[str, Any]:
    """Run ``plan`` end to end (see the module docstring). Returns the summary also written to
    ``train_summary.json`` (by the main process only, under accelerate's many processes)."""
    from agent_rl_sandbox.trainers._metrics import Caps, MetricsWriter, ZeroStdGuard, plot_metrics

    warmup = None
    if plan.trainer in ("grpo", "agentic_grpo") and int(plan.hyperparameters.get("sft_warmup_steps", 0)) > 0:
        plan, warmup = _sft_warmup(plan, paths, cuda=cuda)
    paths.adapter_dir.mkdir(parents=True, exist_ok=True)
    writer = MetricsWriter(paths.metrics)
    caps = Caps(plan.max_steps_cap, plan.train_seconds)
    callbacks: list[Any] = [writer, caps]
    guard = None
    if plan.trainer in ("grpo", "agentic_grpo"):
        guard = ZeroStdGuard(int(plan.hyperparameters.get("zero_std_patience", 20)))
        callbacks.append(guard)
    started = time.monotonic()
    trainer = build_trainer(plan, paths, cuda=cuda, callbacks=callbacks, reward_funcs=reward_funcs)
    setup_s = time.monotonic() - started
    cpu0 = time.process_time()
    result = trainer.train()
    train_cpu_s = time.process_time() - cpu0  # this process's CPU seconds: robust to a shared machine's load
    if guard is not None and guard.refused:
        plot_metrics(paths.metrics, paths.plot, title=f"{plan.job_id} {plan.trainer} (refused)")
        raise TrainingRefused(guard.refused)
    trainer.save_model(str(paths.adapter_dir))
    if not trainer.accelerator.is_main_process:
        return {}
    (paths.adapter_dir / "training_args.bin").unlink(missing_ok=True)  # a pickle; the plan is in the summary
    plot = plot_metrics(paths.metrics, paths.plot, title=f"{plan.job_id} {plan.trainer}")
    runtime = float(result.metrics.get("train_runtime", 0.0)) or (time.monotonic() - started - setup_s)
    tokens = max(writer.tokens, int(getattr(trainer.state, "num_input_tokens_seen", 0) or 0))
    last = writer.last
    summary = {
        "job_id": plan.job_id,
        "trainer": plan.trainer,
        "plan": plan.to_dict(),
        "steps": int(trainer.state.global_step),
        "stopped_by": caps.stopped_by or "data (num_train_epochs or hyperparameters.max_steps)",
        "train_runtime_s": round(runtime, 3),
        "setup_s": round(setup_s, 3),
        "tokens": tokens,
        "tokens_per_s": round(tokens / runtime, 2) if runtime > 0 and tokens else None,
        "train_cpu_s": round(train_cpu_s, 3),
        "tokens_per_cpu_s": round(tokens / train_cpu_s, 2) if train_cpu_s > 0 and tokens else None,
        "final_loss": last.get("loss"),
        "final_reward": last.get("reward"),
        "trainable_parameters": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
        "adapter_dir": str(paths.adapter_dir),
        "adapter_files": sorted(p.name for p in paths.adapter_dir.iterdir()),
        "plot": str(plot) if plot else None,
        "warmup": warmup,
    }
    paths.summary.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary

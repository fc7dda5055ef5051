"""SFT, DPO, KTO and GRPO through TRL + PEFT LoRA on the tiny model: a few real steps each, an
adapter that reloads and changes the model's outputs, metrics.jsonl and the plot, the caps; the
CUDA-only paths (QLoRA, vLLM) refused on this CPU host with the clear message, and their
configurations built."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from trainer_rows import ROWS, write_rows

from agent_rl_sandbox.trainers._gpu import (
    QLORA_ON_CPU,
    VLLM_ON_CPU,
    NeedsGpuError,
    qlora_model_kwargs,
    qlora_quantization_kwargs,
    vllm_grpo_kwargs,
    vllm_serve_command,
)
from agent_rl_sandbox.trainers._plan import plan_from_job
from agent_rl_sandbox.trainers._run import RunPaths, build_trainer, lora_config, run_training, trainer_config

ALL_LINEAR = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def job_doc(trainer, base, data, *, adapter=None, caps=None, **hp):
    hp = {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 1, **hp}
    if trainer == "grpo":
        hp = {"num_generations": 2, "max_completion_length": 12, **hp}
    return {
        "job_id": f"job_{trainer}",
        "spec": {
            "trainer": trainer,
            "base_model": str(base),
            "adapter": adapter or {"kind": "lora", "rank": 4, "alpha": 8, "learning_rate": 5e-3},
            "hyperparameters": hp,
            "caps": caps or {"max_steps": 50, "timeout_s": 600},
        },
        "dataset": {"path": str(data)},
    }


def length_spread(prompts, completions, **kw):
    """A reward with variance on a random model's text (so GRPO's advantages are not all zero)."""
    return [float(len(c[-1].get("content") or "") % 5) for c in completions]


def _logits(model, tok):
    import torch

    ids = tok.apply_chat_template([{"role": "user", "content": "Run the tests."}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)["input_ids"]  # fmt: skip
    with torch.no_grad():
        return model(ids).logits


@pytest.mark.slow
@pytest.mark.parametrize("trainer", ["sft", "dpo", "kto", "grpo"])
def test_trainer_runs_saves_an_adapter_that_reloads_and_changes_outputs(trainer, tiny_model_dir, tmp_path):
    from agent_rl_sandbox.trainers import load_model

    data = write_rows(tmp_path / "data.jsonl", ROWS[trainer](4))
    plan = plan_from_job(job_doc(trainer, tiny_model_dir, data, max_steps=2))
    paths = RunPaths.in_dir(tmp_path / "ws")
    summary = run_training(plan, paths, reward_funcs=[length_spread] if trainer == "grpo" else None)

    assert summary["steps"] == 2 and summary["trainer"] == trainer
    cfg = json.loads((paths.adapter_dir / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["r"] == 4 and cfg["lora_alpha"] == 8
    assert {m.rsplit(".", 1)[-1] for m in cfg["target_modules"]} == ALL_LINEAR  # "all-linear", resolved by PEFT
    assert {m.split(".")[2] for m in cfg["target_modules"]} == {"0", "1"}  # both layers
    assert (paths.adapter_dir / "adapter_model.safetensors").stat().st_size > 0
    assert not (paths.adapter_dir / "training_args.bin").exists()
    lines = [json.loads(x) for x in paths.metrics.read_text().splitlines()]
    assert [m["step"] for m in lines] == [1, 2]
    assert all(isinstance(m["loss"], float) for m in lines)
    if trainer == "grpo":
        assert all(isinstance(m["reward"], float) for m in lines) and "frac_reward_zero_std" in lines[0]
    else:
        assert lines[-1]["tokens"] > 0 and summary["tokens_per_s"] > 0
    assert paths.plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pre = json.loads(paths.preflight.read_text())
    assert pre["checked"] == 4 and pre["rendered"] and "<|im_start|>" in pre["rendered"][0]

    model, tok = load_model(tiny_model_dir, paths.adapter_dir)
    trained = _logits(model, tok)
    with model.disable_adapter():
        base = _logits(model, tok)
    assert (trained - base).abs().max().item() > 1e-5


@pytest.mark.slow
def test_caps_max_steps_stops_a_longer_run(tiny_model_dir, tmp_path):
    """Eight rows at batch 2 would be 4 steps; caps.max_steps 1 stops after one, and the adapter is still saved."""
    data = write_rows(tmp_path / "data.jsonl", ROWS["sft"](8))
    plan = plan_from_job(job_doc("sft", tiny_model_dir, data, caps={"max_steps": 1, "timeout_s": 600}))
    summary = run_training(plan, RunPaths.in_dir(tmp_path / "ws"))
    assert summary["steps"] == 1 and summary["stopped_by"] == "caps.max_steps (1)"
    assert (tmp_path / "ws" / "adapter" / "adapter_model.safetensors").exists()


def test_caps_timeout_stops_and_leaves_time_to_save():
    from agent_rl_sandbox.trainers._metrics import Caps

    caps = Caps(max_steps=100, train_seconds=0.0)
    control = SimpleNamespace(should_training_stop=False)
    caps.on_step_end(None, SimpleNamespace(global_step=1), control)
    assert control.should_training_stop and caps.stopped_by.startswith("caps.timeout_s")
    plan = plan_from_job(job_doc("sft", "/m", "/d.jsonl", caps={"max_steps": 5, "timeout_s": 100}))
    assert plan.train_seconds == 90.0  # a tenth kept for saving (at most 30 s)
    assert (
        plan_from_job(job_doc("sft", "/m", "/d.jsonl", caps={"max_steps": 5, "timeout_s": 3600})).train_seconds == 3570
    )


def test_grpo_with_zero_reward_variance_is_refused_with_a_clear_reason(tiny_model_dir, tmp_path):
    from agent_rl_sandbox.trainers._run import TrainingRefused

    data = write_rows(tmp_path / "data.jsonl", ROWS["grpo"](8))
    plan = plan_from_job(job_doc("grpo", tiny_model_dir, data, max_steps=5, zero_std_patience=2))
    paths = RunPaths.in_dir(tmp_path / "ws")
    with pytest.raises(TrainingRefused, match="zero reward variance for 2 logged steps") as e:
        run_training(plan, paths)  # the built-in tool_call reward: a random model never calls a tool
    assert "warm up with SFT" in str(e.value)
    assert len(paths.metrics.read_text().splitlines()) == 2 and not (paths.adapter_dir / "adapter_config.json").exists()


# -- the CUDA-only paths: configuration everywhere, refusal on a CPU host -------------------------


def test_qlora_on_cpu_fails_with_the_clear_message_before_loading_anything(tmp_path):
    data = write_rows(tmp_path / "data.jsonl", ROWS["sft"](2))
    doc = job_doc("sft", tmp_path / "no-such-model", data, adapter={"kind": "qlora", "rank": 8})
    with pytest.raises(NeedsGpuError) as e:
        run_training(plan_from_job(doc), RunPaths.in_dir(tmp_path / "ws"), cuda=False)
    assert str(e.value) == QLORA_ON_CPU == "QLoRA needs a CUDA GPU; use lora on this machine"
    assert not (tmp_path / "ws" / "preflight.json").exists()


def test_vllm_on_cpu_fails_with_the_clear_message(tmp_path):
    data = write_rows(tmp_path / "data.jsonl", ROWS["grpo"](2))
    doc = job_doc("grpo", tmp_path / "no-such-model", data, use_vllm=True, vllm_mode="server")
    with pytest.raises(NeedsGpuError, match="vLLM generation needs a CUDA GPU; set use_vllm false on this machine"):
        build_trainer(plan_from_job(doc), RunPaths.in_dir(tmp_path / "ws"), cuda=False)
    assert VLLM_ON_CPU.startswith("vLLM generation needs a CUDA GPU")


def test_qlora_and_vllm_configurations_build_on_cpu(tmp_path):
    from transformers import BitsAndBytesConfig
    from trl import GRPOConfig
    from trl.scripts.vllm_serve import ScriptArguments

    bnb = BitsAndBytesConfig(**qlora_quantization_kwargs())
    assert bnb.load_in_4bit and bnb.bnb_4bit_quant_type == "nf4" and bnb.bnb_4bit_use_double_quant
    kw = qlora_model_kwargs(cuda=True)  # what a CUDA host would pass to from_pretrained
    assert kw["quantization_config"].load_in_4bit and kw["dtype"] == "bfloat16"
    with pytest.raises(NeedsGpuError, match="QLoRA needs a CUDA GPU"):
        qlora_model_kwargs(cuda=False)

    cfg = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[], **vllm_grpo_kwargs("server"))
    assert cfg.use_vllm and cfg.vllm_mode == "server" and cfg.vllm_server_port == 8000
    assert (
        GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, **vllm_grpo_kwargs("colocate")).vllm_mode
        == "colocate"
    )
    with pytest.raises(ValueError, match="server or colocate"):
        vllm_grpo_kwargs("remote")
    cmd = vllm_serve_command("/models/base", port=8123, tensor_parallel_size=2)
    assert cmd[:2] == ["trl", "vllm-serve"]
    fields = {f.replace("_", "-") for f in ScriptArguments.__dataclass_fields__}
    flags = [a[2:] for a in cmd if a.startswith("--")]
    assert flags and all(f in fields for f in flags), (flags, fields)  # every flag is one TRL's server knows
    assert cmd[cmd.index("--port") + 1] == "8123" and cmd[cmd.index("--model") + 1] == "/models/base"


def test_configs_are_cpu_safe_and_lora_defaults_to_all_linear(tmp_path):
    for trainer in ("sft", "dpo", "kto", "grpo"):
        plan = plan_from_job(job_doc(trainer, "/m", tmp_path / "none.jsonl", adapter={"kind": "lora"}))
        args = trainer_config(plan, RunPaths.in_dir(tmp_path), cuda=False)
        assert args.use_cpu and not args.bf16 and args.save_strategy == "no" and args.report_to == []
        assert args.learning_rate == plan.learning_rate
        lc = lora_config(plan)
        assert lc.target_modules == "all-linear" or set(lc.target_modules) == {"all-linear"}
    sft = trainer_config(plan_from_job(job_doc("sft", "/m", "/d")), RunPaths.in_dir(tmp_path), cuda=False)
    assert sft.assistant_only_loss and sft.max_length == 1024


def test_a_configuration_trl_refuses_is_a_plan_error_not_a_crash(tmp_path):
    from agent_rl_sandbox.trainers._plan import PlanError

    plan = plan_from_job(job_doc("grpo", "/m", "/d.jsonl", num_generations=3))  # batch 2 is not divisible by 3
    with pytest.raises(
        PlanError, match="TRL refused the grpo configuration: .*num_generations.*fix spec.hyperparameters"
    ):
        trainer_config(plan, RunPaths.in_dir(tmp_path), cuda=False)


@pytest.mark.slow
def test_grpo_with_an_sft_warmup_continues_the_warmed_adapter(tiny_model_dir, tmp_path):
    """``sft_warmup_steps``: SFT on the job's conversations first (warmup/), then GRPO from that adapter
    on the conversations' prompts; the steps of both count against caps.max_steps."""
    data = write_rows(tmp_path / "data.jsonl", [{**r, "task_id": f"t{i}"} for i, r in enumerate(ROWS["sft"](4))])
    plan = plan_from_job(
        job_doc("grpo", tiny_model_dir, data, sft_warmup_steps=2, caps={"max_steps": 3, "timeout_s": 600})
    )
    paths = RunPaths.in_dir(tmp_path / "ws")
    summary = run_training(plan, paths, reward_funcs=[length_spread])
    warm = tmp_path / "ws" / "warmup"
    assert summary["warmup"]["steps"] == 2 and summary["steps"] == 1  # 3 - 2 left for GRPO
    assert len((warm / "metrics.jsonl").read_text().splitlines()) == 2 and (warm / "metrics.png").exists()
    prompts = [json.loads(x) for x in (warm / "grpo_prompts.jsonl").read_text().splitlines()]
    assert prompts[1]["task_id"] == "t1" and [m["role"] for m in prompts[1]["prompt"]] == ["system", "user"]
    assert summary["plan"]["init_adapter"] == str(warm / "adapter")
    warmed = (warm / "adapter" / "adapter_model.safetensors").read_bytes()
    assert warmed != (paths.adapter_dir / "adapter_model.safetensors").read_bytes()  # GRPO moved the warmed adapter

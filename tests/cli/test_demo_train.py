"""``demo --train`` end to end, cut short (2 SFT warm-up steps, 1 agentic GRPO step): every stage
runs for real (MCP over stdio, export, route, request, human approval, the worker's five stages,
the gate), the figures are printed and match the job's files; learning itself is measured by the
full demo (README), not here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_train_runs_every_stage(tmp_path, monkeypatch, tiny_model_dir):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    home = tmp_path / "home"
    shutil.copytree(tiny_model_dir, home / "models" / "tiny")  # reused by the demo's model stage
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    res = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "demo", "--train", "--home", str(home), "--sft-steps", "2",
         "--grpo-steps", "1"],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = res.stdout
    for n in range(1, 9):
        assert f"[{n}/9]" in out, out[-3000:] + res.stderr[-3000:]
    assert "approves on your behalf" in out and "No MCP tool can approve" in out
    figures = json.loads(re.search(r"measured: (\{.*\})", out.replace("\n", " ")).group(1))
    ws = home / "jobs" / figures["job_id"]
    assert (ws / "warmup" / "adapter" / "adapter_config.json").is_file()  # the SFT warm-up ran
    spec = json.loads((ws / "job.json").read_text())["spec"]
    # the default --lr (1e-2) for SFT; GRPO at a hundredth (at a tenth, 4 GRPO steps undid the SFT: README)
    assert spec["hyperparameters"]["sft_learning_rate"] == 1e-2, spec
    assert spec["adapter"]["learning_rate"] == pytest.approx(1e-4), spec
    metrics = [json.loads(line) for line in (ws / "metrics.jsonl").read_text().splitlines()]
    assert metrics and "frac_reward_zero_std" in metrics[0]  # then agentic GRPO over the sandboxes
    services = Services.build(Settings(home=home))
    try:
        _, rollouts = services.store.trajectories.list(agent_name=f"grpo:{figures['job_id']}")
    finally:
        services.close()
    assert rollouts >= 4  # one step of 4 generations, each a recorded sandbox episode
    if figures["state"] == "failed":
        # 2 warm-up steps leave a model whose 4 rollouts all earn the same reward: the zero-variance
        # refusal (patience = GRPO steps) ends the job with its reason, through the worker
        assert "zero reward variance" in figures["reason"], figures
        assert res.returncode == 1
        return
    assert (figures["sft_steps_run"], figures["grpo_steps_run"]) == (2, 1), figures  # no cap stopped it early
    assert f"trained: 2 of 2 SFT steps, 1 of 1 agentic GRPO steps (stopped by {figures['train_stopped_by']})" in out
    scores = json.loads((ws / "scores.json").read_text())
    assert figures["baseline_pass_rate"] == scores["baseline"] and figures["post_pass_rate"] == scores["final"]
    assert figures["state"] in ("gate_passed", "gate_failed"), figures
    assert res.returncode == (0 if figures["state"] == "gate_passed" else 1)
    gate = json.loads((ws / "gate_report.json").read_text())["gate"]
    assert {"heldout_only", "max_regression", "min_pass_rate"} <= {c["name"] for c in gate["checks"]}


@pytest.mark.slow
def test_demo_stage_9_deploys_answers_and_falls_back_through_the_peft_server(tmp_path, tiny_model_dir):
    """Stage 9 alone (the cut-short demo above never passes its gate): a registered candidate (a
    random LoRA on the tiny model) is deployed through the local PEFT server after its unhook dry
    run, answers a held-out variant, and after the kill switch the route's base name answers it."""
    from io import StringIO

    from peft import LoraConfig, get_peft_model
    from rich.console import Console
    from transformers import AutoModelForCausalLM

    from agent_rl_sandbox.cli._train_demo import BEHAVIOUR, _answer_and_kill_switch, _Progress
    from agent_rl_sandbox.schemas.jobs import JobSpec
    from agent_rl_sandbox.tools.jobs import JobRepository, canonical_spec, later, spec_hash

    settings = Settings(home=tmp_path / "home")
    spec = {
        "route": "sft", "trainer": "sft", "base_model": str(tiny_model_dir),
        "dataset": {"kind": "file", "path": "/data/sft.jsonl"}, "gate": {"behaviour": BEHAVIOUR}, "reason": "demo",
    }  # fmt: skip
    canon = canonical_spec(JobSpec.model_validate(spec), cwd=Path("/"), dataset_sha256="b" * 64)
    services = Services.build(settings)
    try:
        job_id = JobRepository(services.store.engine).add(
            requester="agent-a", spec=canon, spec_hash=spec_hash(canon), expires_at=later(60), trainer="sft",
            behaviour=BEHAVIOUR,
        ).job_id  # fmt: skip
        ws = settings.jobs_dir / job_id
        ws.mkdir(parents=True)
        (ws / "job.json").write_text("{}")
        peft = get_peft_model(
            AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
            LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False),
        )
        peft.save_pretrained(str(ws / "adapter"))
        services.adapters.register_candidate(
            job_id=job_id, behaviour=BEHAVIOUR, base_model=str(tiny_model_dir), spec_hash="h" * 64,
            path=ws / "adapter", gate_report={"passed": True},
        )  # fmt: skip
    finally:
        services.close()
    buf = StringIO()
    p = _Progress(Console(file=buf, width=200))
    figures = _answer_and_kill_switch(settings, tiny_model_dir, ws, p)
    out = buf.getvalue()
    assert figures["unhooks_ok"] is True, out
    assert "unhook dry run: load ok, disable ok, disable ok, rollback ok" in out
    assert f"kill switch pulled: routes.json sends {BEHAVIOUR} to {tiny_model_dir}" in out and "unloaded: True" in out
    assert "lora_server stopped" in out
    services = Services.build(settings)
    try:
        assert services.adapters.get(figures["deployed_adapter"]).state == "disabled"
        _, n = services.store.trajectories.list(agent_name="demo-deployed")
        _, m = services.store.trajectories.list(agent_name="demo-fallback")
    finally:
        services.close()
    assert n == 1 and m == 1  # both episodes were played and recorded

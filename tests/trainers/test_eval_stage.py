"""The worker's baseline / post_eval stages (the policy agent on the behaviour's held-out variants)
and the gate stage (the job's gate, no regression against the baseline, held-out only), run as the
worker runs them: in a job workspace, from the environment, on the tiny model."""

from __future__ import annotations

import json

import pytest

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings


@pytest.fixture
def workspace(tmp_path, monkeypatch, tiny_model_dir):
    home, ws = tmp_path / "home", tmp_path / "home" / "jobs" / "job_00000000aaaa"
    ws.mkdir(parents=True)
    spec = {"base_model": str(tiny_model_dir), "gate": {"name": "default", "behaviour": "setup-triage"}}
    (ws / "job.json").write_text(json.dumps({"job_id": "job_00000000aaaa", "spec": spec, "dataset": None}))
    for k, v in {
        "AGENT_RL_SANDBOX_HOME": str(home),
        "AGENT_RL_SANDBOX_WORKSPACE": str(ws),
        "AGENT_RL_SANDBOX_JOB_JSON": str(ws / "job.json"),
        "AGENT_RL_SANDBOX_SCORES": str(ws / "scores.json"),
        "AGENT_RL_SANDBOX_ADAPTER_DIR": str(ws / "adapter"),
    }.items():
        monkeypatch.setenv(k, v)
    return home, ws


@pytest.mark.slow
def test_baseline_post_eval_and_gate_on_the_heldout_variants(workspace, tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from agent_rl_sandbox.trainers import eval_stage
    from agent_rl_sandbox.worker import gate_stage

    home, ws = workspace
    assert eval_stage.main(["post_eval"]) == 2  # no adapter yet: refused, with the reason for the job
    assert "no trained adapter" in json.loads((ws / "post_eval_error.json").read_text())["reason"]

    assert eval_stage.main(["baseline", "--max-turns", "2", "--max-new-tokens", "16"]) == 0
    peft = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), LoraConfig(r=4, target_modules="all-linear")
    )
    peft.save_pretrained(str(ws / "adapter"))
    assert eval_stage.main(["post_eval", "--max-turns", "2", "--max-new-tokens", "16"]) == 0

    scores = json.loads((ws / "scores.json").read_text())
    suite = ["setup-triage/heldout-1", "setup-triage/heldout-2", "setup-triage/heldout-3", "setup-triage/heldout-4"]
    assert scores["suite"] == suite and scores["baseline_episodes"] == scores["post_eval_episodes"] == 4
    assert scores["baseline"] == 0.0 and scores["final"] == 0.0  # an untrained model passes nothing
    episodes = json.loads((ws / "baseline_episodes.json").read_text())
    assert [e["task_id"] for e in episodes] == suite
    services = Services.build(Settings(home=home))
    try:
        rows, total = services.store.trajectories.list(agent_name="post_eval:job_00000000aaaa")
        assert total == 4 and all(r.status == "finished" and r.split == "heldout" for r in rows)
    finally:
        services.close()

    assert gate_stage.main([]) == 1  # the default gate wants every held-out episode to pass
    gate = json.loads((ws / "gate_report.json").read_text())["gate"]
    checks = {c["name"]: c for c in gate["checks"]}
    assert not gate["passed"] and checks["min_pass_rate"]["status"] == "fail"
    assert checks["heldout_only"]["status"] == "pass" and checks["max_regression"]["status"] == "pass"
    assert checks["max_regression"]["measured"] == 0.0  # the same pass rate as the base: no regression


def test_gate_stage_without_reports_fails_the_job_with_the_reason(workspace):
    from agent_rl_sandbox.worker import gate_stage

    _, ws = workspace
    assert gate_stage.main([]) == 2
    assert "post_eval.report.json" in json.loads((ws / "gate_error.json").read_text())["reason"]

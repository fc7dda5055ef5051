"""``demo --train`` end to end, cut short (2 SFT warm-up steps, 1 agentic GRPO step): every stage
runs for real (MCP over stdio, export, route, request, human approval, the worker's five stages,
the gate), the figures are printed and match the job's files; learning itself is measured by the
full demo (README), not here."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app


@pytest.mark.slow
def test_demo_train_runs_every_stage(tmp_path, monkeypatch, tiny_model_dir):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    home = tmp_path / "home"
    shutil.copytree(tiny_model_dir, home / "models" / "tiny")  # reused by the demo's model stage
    res = CliRunner().invoke(
        app, ["demo", "--train", "--home", str(home), "--sft-steps", "2", "--grpo-steps", "1"], catch_exceptions=False
    )
    out = res.output
    for n in range(1, 9):
        assert f"[{n}/9]" in out, out[-3000:]
    assert "approves on your behalf" in out and "No MCP tool can approve" in out
    figures = json.loads(re.search(r"measured: (\{.*\})", out.replace("\n", " ")).group(1))
    ws = home / "jobs" / figures["job_id"]
    scores = json.loads((ws / "scores.json").read_text())
    assert figures["baseline_pass_rate"] == scores["baseline"] and figures["post_pass_rate"] == scores["final"]
    assert figures["state"] in ("gate_passed", "gate_failed")
    assert res.exit_code == (0 if figures["state"] == "gate_passed" else 1)
    assert (ws / "warmup" / "adapter" / "adapter_config.json").is_file()  # the SFT warm-up ran
    assert (ws / "adapter" / "adapter_config.json").is_file()  # then agentic GRPO saved the job's adapter
    gate = json.loads((ws / "gate_report.json").read_text())["gate"]
    assert {"heldout_only", "max_regression", "min_pass_rate"} <= {c["name"] for c in gate["checks"]}

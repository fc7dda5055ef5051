"""The shipped ``train`` stage end to end on CPU: a real worker claims an approved SFT job on the tiny
model and runs the shipped ``validate`` and ``train`` stages (``accelerate launch`` of
``agent_rl_sandbox.trainers.train_stage``; ``baseline``, ``post_eval`` and ``gate`` are stand-ins,
they are not this stage's business). The workspace gets the adapter, metrics.jsonl, the plot,
train.log and the summary; a preflight refusal and a crash each write ``train_error.json`` with the
reason and the last log lines, keep the workspace, and put the reason into the job."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from worker_jobs import queued_job

from agent_rl_sandbox.tools.jobs import JobRepository
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.worker import DEFAULT_WORKER_TOML, Worker, parse_worker_config

ROOT = Path(__file__).resolve().parents[2]
STAND_INS = "".join(
    f'[stages.{name}]\ncommand = ["/bin/sh", "-c", "true"]\ntimeout_s = 20\n'
    for name in ("baseline", "post_eval", "gate")
)


TOOLS = json.dumps([{"type": "function", "function": {"name": "sandbox_claim", "description": "Claim paths.",
    "parameters": {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
                   "required": ["paths"]}}}])  # fmt: skip


def _rows(n: int = 4) -> str:
    rows = []
    for i in range(n):
        call = {"id": "c1", "type": "function",
                "function": {"name": "sandbox_claim", "arguments": json.dumps({"paths": [f"src/m{i}.py"]})}}  # fmt: skip
        rows.append({"messages": [
            {"role": "user", "content": f"Claim src/m{i}.py, then edit it."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "name": "sandbox_claim", "content": "{\"claims\": [\"ok\"]}"},
            {"role": "assistant", "content": "Claimed."},
        ], "tools": TOOLS})  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "userhome"
    home.mkdir()
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(home),
        "HF_HOME": str(home / "hf"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),
    }  # fmt: skip


def _run_job(tmp_path, env, tiny_model_dir, **hp):
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        repo = JobRepository(store.engine)
        data = tmp_path / "data" / "sft.jsonl"
        data.parent.mkdir()
        data.write_text(_rows())
        sha = hashlib.sha256(data.read_bytes()).hexdigest()
        jid = queued_job(
            repo, data, sha, base_model=str(tiny_model_dir),
            adapter={"kind": "lora", "rank": 4, "alpha": 8, "learning_rate": 5e-3},
            hyperparameters={"per_device_train_batch_size": 2, "gradient_accumulation_steps": 1, **hp},
            caps={"max_steps": 2, "timeout_s": 600},
        )  # fmt: skip
        cfg = parse_worker_config(DEFAULT_WORKER_TOML, source="default")
        cfg.stages.update(parse_worker_config(STAND_INS, source="stand-ins").stages)  # this test is about train
        assert cfg.stages["train"].argv[1:3] == ("-m", "accelerate.commands.launch")
        assert Worker(repo, cfg, tmp_path / "jobs", subreaper=False, base_env=env).run(once=True) == 1
        return repo.get(jid), tmp_path / "jobs" / jid
    finally:
        store.close()


@pytest.mark.slow
def test_worker_runs_the_shipped_train_stage_end_to_end(tmp_path, env, tiny_model_dir):
    job, ws = _run_job(tmp_path, env, tiny_model_dir)
    run_log = (ws / "run.log").read_text()
    assert job.state == "gate_passed", (job.reason, run_log[-3000:])
    assert "stage train: ok" in run_log and "train: sft 2 steps (caps.max_steps (2))" in run_log
    assert json.loads((ws / "adapter" / "adapter_config.json").read_text())["r"] == 4
    assert (ws / "adapter" / "adapter_model.safetensors").stat().st_size > 0
    assert [json.loads(x)["step"] for x in (ws / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    assert (ws / "metrics.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((ws / "train_summary.json").read_text())
    assert summary["steps"] == 2 and summary["tokens_per_s"] > 0 and summary["plan"]["rank"] == 4
    assert "plan:" in (ws / "train.log").read_text() and not (ws / "train_error.json").exists()


@pytest.mark.slow
def test_a_preflight_refusal_fails_the_job_with_its_reason_and_keeps_the_workspace(tmp_path, env, tiny_model_dir):
    job, ws = _run_job(tmp_path, env, tiny_model_dir, max_length=32)  # the prompt alone is longer
    assert job.state == "failed"
    assert job.reason.startswith("stage_failed:train: exit 1: preflight (sft): row at line 1 has a "), job.reason
    assert "fills max_length 32" in job.reason and "Next step: raise max_length" in job.reason
    err = json.loads((ws / "train_error.json").read_text())
    assert err["kind"] == "refused" and err["stage"] == "train" and "max_length 32" in err["reason"]
    assert any("refused" in line for line in err["last_log_lines"])
    assert (ws / "job.json").exists() and (ws / "dataset_report.json").exists()  # the workspace is kept
    assert not (ws / "adapter" / "adapter_config.json").exists()


@pytest.mark.slow
def test_a_crash_writes_the_reason_the_traceback_and_the_last_log_lines(tmp_path, env):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    data = ws / "d.jsonl"
    data.write_text(_rows(1))
    spec = {"trainer": "sft", "base_model": str(empty), "adapter": {"kind": "lora", "rank": 4}}
    (ws / "job.json").write_text(json.dumps({"job_id": "job_crash", "spec": spec, "dataset": {"path": str(data)}}))
    p = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.trainers.train_stage"],
        cwd=ws, env={**env, "AGENT_RL_SANDBOX_WORKSPACE": str(ws)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 1, p.stderr[-2000:]
    err = json.loads((ws / "train_error.json").read_text())
    assert err["kind"] == "crash" and err["reason"].split(":")[0].endswith("Error"), err["reason"]
    assert "Traceback" in err["traceback"] and err["last_log_lines"]
    assert any("plan:" in line for line in err["last_log_lines"])
    assert "train: crashed:" in p.stderr


def test_a_stage_error_file_explains_the_failure_and_a_stale_one_does_not(tmp_path):
    """Any stage may write ``<stage>_error.json``; the worker appends its reason (one line, cut at 500
    characters) to ``stage_failed:NAME: exit N``, and removes a leftover file before the stage runs."""
    write = """printf '{"reason": "preflight: row 3\\\\nhas no assistant turn"}' > train_error.json; exit 1"""
    stale = "exit 4"
    for script, want in ((write, "stage_failed:train: exit 1: preflight: row 3 has no assistant turn"),
                         (stale, "stage_failed:train: exit 4")):  # fmt: skip
        store = Store(f"sqlite:///{tmp_path / 'store.db'}")
        try:
            repo = JobRepository(store.engine)
            data = tmp_path / "data" / "sft.jsonl"
            data.parent.mkdir(exist_ok=True)
            data.write_text(_rows(1))
            jid = queued_job(repo, data, hashlib.sha256(data.read_bytes()).hexdigest())
            toml = "".join(
                f"[stages.{n}]\ncommand = {json.dumps(['/bin/sh', '-c', s])}\ntimeout_s = 20\n"
                for n, s in (("validate", "true"), ("baseline", "true"), ("train", script))
            )
            ws = tmp_path / "jobs" / jid
            ws.mkdir(parents=True, exist_ok=True)
            (ws / "train_error.json").write_text('{"reason": "stale: from an earlier run"}')
            cfg = parse_worker_config(toml, source="test")
            Worker(repo, cfg, tmp_path / "jobs", subreaper=False).run(once=True)
            assert repo.get(jid).reason == want
        finally:
            store.close()

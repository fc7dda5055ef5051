"""The operator's stage configuration: the shipped default (validate, train) says what is not installed, a
worker.toml replaces it, and malformed files are refused with the key and a next step."""

from __future__ import annotations

import json
import os
import sys

import pytest

from agent_rl_sandbox.worker import (
    STAGE_ORDER,
    JobWorkspace,
    WorkerConfigError,
    load_worker_config,
    parse_worker_config,
    run_stage,
)


def test_shipped_default_installs_every_stage(tmp_path):
    import importlib.util

    cfg = load_worker_config(tmp_path)
    assert cfg.source == "built-in default"
    assert list(cfg.stages) == ["validate", "baseline", "train", "post_eval", "gate"]
    assert cfg.missing() == []
    assert cfg.stages["baseline"].argv[1:4] == ("-m", "agent_rl_sandbox.trainers.eval_stage", "baseline")
    assert cfg.stages["post_eval"].argv[1:4] == ("-m", "agent_rl_sandbox.trainers.eval_stage", "post_eval")
    assert cfg.stages["gate"].argv[1:3] == ("-m", "agent_rl_sandbox.worker.gate_stage")
    assert cfg.stages["validate"].argv[0] == sys.executable
    train = cfg.stages["train"].argv  # accelerate launch of the trainers' stage module, one process
    assert train[:3] == (sys.executable, "-m", "accelerate.commands.launch")
    assert train[-2:] == ("-m", "agent_rl_sandbox.trainers.train_stage") and "--num_processes" in train
    assert importlib.util.find_spec("accelerate.commands.launch") is not None


def test_home_worker_toml_replaces_the_default(tmp_path):
    (tmp_path / "worker.toml").write_text(
        'grace_s = 1\n[stages.train]\ncommand = ["{python}", "-c", "pass"]\ntimeout_s = 7\n'
        '[stages.gate]\ncommand = ["/bin/true"]\n'
    )
    cfg = load_worker_config(tmp_path)
    assert cfg.grace_s == 1.0 and cfg.source.endswith("worker.toml")
    assert cfg.stages["train"].argv == (sys.executable, "-c", "pass") and cfg.stages["train"].timeout_s == 7.0
    assert cfg.stages["gate"].timeout_s == 3600.0
    assert cfg.missing() == ["validate", "baseline", "post_eval"]


@pytest.mark.parametrize(
    "text, key",
    [
        ("[stages.deploy]\ncommand=['x']", "stages.deploy"),
        ("[stages.train]\ncommand='rm -rf /'", "command"),
        ("[stages.train]\ncommand=['x']\nshell=true", "only command and timeout_s"),
        ("[stages.train]\ncommand=['x']\ntimeout_s=0", "timeout_s"),
        ("grace_s=-1", "grace_s"),
        ("python='x'", "unknown keys"),
        ("[stages", "not TOML"),
    ],
)
def test_malformed_configs_are_refused(text, key):
    with pytest.raises(WorkerConfigError, match="Next step") as exc:
        parse_worker_config(text, source="w.toml")
    assert key in str(exc.value)


def test_an_explicit_missing_file_is_an_error(tmp_path):
    with pytest.raises(WorkerConfigError, match="no such file"):
        load_worker_config(tmp_path, tmp_path / "absent.toml")


def test_stage_order():
    assert STAGE_ORDER == ("validate", "baseline", "train", "post_eval", "gate")


def _validate(tmp_path, doc):
    job_id = f"job-7-{os.getpid()}-{tmp_path.name}"  # unique: the stage sweep takes every process marked with it
    ws = JobWorkspace.create(tmp_path / "jobs", job_id, doc)
    cmd = load_worker_config(tmp_path).stages["validate"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path), "HF_HUB_OFFLINE": "1", **ws.env()}
    res = run_stage("validate", cmd.argv, job_id=job_id, cwd=ws.root, log_path=ws.run_log, timeout_s=60, env=env)
    return res, ws


def test_validate_stage_checks_the_hash_and_the_data(tmp_path):
    import hashlib

    data = tmp_path / "sft.jsonl"
    data.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}) + "\n"
    )
    good = hashlib.sha256(data.read_bytes()).hexdigest()
    res, ws = _validate(tmp_path, {"dataset": {"path": str(data), "sha256": good}})
    assert res.exit_code == 0, ws.run_log.read_text()
    assert (ws.root / "dataset_report.json").exists()
    data.write_text(data.read_text() + "\n")  # changed after approval
    res, ws = _validate(tmp_path, {"dataset": {"path": str(data), "sha256": good}})
    assert res.exit_code == 1 and "changed" in ws.run_log.read_text()
    res, ws = _validate(tmp_path, {"spec": {}})
    assert res.exit_code == 2


def test_workspace_layout_and_plain_ids(tmp_path):
    ws = JobWorkspace.create(tmp_path, "j1", {"spec_hash": "h"})
    assert json.loads(ws.job_json.read_text()) == {"spec_hash": "h"} and ws.adapter_dir.is_dir()
    ws.log("stage validate ok")
    assert ws.run_log.read_text().endswith(" stage validate ok\n")
    assert ws.read_scores() == {}
    ws.scores.write_text("[1]")
    assert ws.read_scores() == {}
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="Next step"):
            JobWorkspace.create(tmp_path, bad, {})

"""Reading a job workspace for the human faces (``tools/jobs/_workspace.py``): bounded log tails,
``scores.json``, metric series from ``metrics.jsonl`` (the trainers' rows), the PNG plots; nothing
follows a symbolic link a stage could have left, and malformed files read as absent, not errors."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.tools.jobs import (
    JobRepository,
    canonical_spec,
    later,
    log_tail,
    metrics_series,
    plot_bytes,
    plot_names,
    read_scores,
    spec_hash,
)

SPEC = {
    "route": "sft", "trainer": "sft", "base_model": "/models/tiny",
    "dataset": {"kind": "file", "path": "/data/sft.jsonl"}, "gate": {"behaviour": "claim-before-edit"},
    "reason": "teach claiming",
}  # fmt: skip


@pytest.fixture
def job(store, tmp_path):
    canon = canonical_spec(JobSpec.model_validate(SPEC), cwd=Path("/"), dataset_sha256="b" * 64)
    rec = JobRepository(store.engine).add(
        requester="agent-a", spec=canon, spec_hash=spec_hash(canon), expires_at=later(60),
        trainer="sft", behaviour="claim-before-edit",
    )  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    return dataclasses.replace(rec, workspace=str(ws))


def test_log_tail_is_bounded_and_absent_logs_read_as_none(job):
    ws = Path(job.workspace)
    assert log_tail(job, "run.log") is None
    (ws / "run.log").write_bytes(b"x" * 100 + b"\xff tail\n")
    got = log_tail(job, "run.log", max_bytes=20)
    assert got["size"] == 107 and got["truncated"] and got["text"].endswith("\ufffd tail\n") and len(got["text"]) == 20
    assert log_tail(job, "run.log")["truncated"] is False
    with pytest.raises(ValueError, match="not a job log"):
        log_tail(job, "../etc/passwd")
    assert log_tail(dataclasses.replace(job, workspace=None), "run.log") is None


def test_scores_and_metrics_survive_malformed_files(job):
    ws = Path(job.workspace)
    (ws / "scores.json").write_text("[1, 2]")
    assert read_scores(job) is None
    (ws / "scores.json").write_text('{"baseline": 0.25, "final": 0.5}')
    assert read_scores(job) == {"baseline": 0.25, "final": 0.5}
    rows = [json.dumps({"step": i, "loss": 1 / (i + 1), "reward": None, "learning_rate": 1e-4}) for i in range(1000)]
    rows += ["not json", "[1]", json.dumps({"step": True, "loss": float("nan")}), json.dumps({"loss": 0.001})]
    (ws / "metrics.jsonl").write_text("\n".join(rows) + "\n")
    series = metrics_series(job, max_points=100)
    assert set(series) == {"loss"}  # null rewards and unknown keys are not series
    pts = series["loss"]
    assert len(pts) <= 100 and pts[0] == (0.0, 1.0) and pts[-1] == (1004.0, 0.001)  # the last row: its line number
    assert all(math.isfinite(y) for _, y in pts)


def test_plots_are_the_trainers_pngs_and_no_link_is_followed(job, tmp_path):
    ws = Path(job.workspace)
    assert plot_names(job) == []
    (ws / "metrics.png").write_bytes(b"\x89PNG root")
    (ws / "plots").mkdir()
    (ws / "plots" / "reward.png").write_bytes(b"\x89PNG reward")
    (ws / "plots" / "metrics.png").write_bytes(b"\x89PNG shadowed")
    (ws / "plots" / "notes.txt").write_text("x")
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"secret")
    (ws / "plots" / "link.png").symlink_to(secret)
    assert plot_names(job) == ["metrics.png", "reward.png"]
    assert plot_bytes(job, "metrics.png") == b"\x89PNG root"
    assert plot_bytes(job, "reward.png") == b"\x89PNG reward"
    for name in ("link.png", "notes.txt", "../secret.png", "missing.png", ""):
        assert plot_bytes(job, name) is None, name
    assert plot_bytes(job, "reward.png", max_bytes=4) is None
    # a plots/ folder swapped for a link elsewhere is not read either
    (ws / "plots").rename(ws / "plots.real")
    (ws / "plots").symlink_to(ws / "plots.real")
    assert plot_bytes(job, "reward.png") is None and plot_names(job) == ["metrics.png"]

"""A job whose dataset is a store selection, end to end on a real SQLite store: real scripted sandbox
episodes on train variants give the data, an agent requests through :class:`JobService`, a human
approves with the shown hash, and the worker (``--once``) materialises the selection through the
trajectory export, hashes it, records it in ``job.json`` and the real ``validate`` stage subprocess
re-validates it against that hash."""

from __future__ import annotations

import hashlib
import json
import sys

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools.sandbox._scripted import play_task_script
from agent_rl_sandbox.worker import build_worker, read_results

AGENT = Caller("agent-a")


def _stage(argv: list[str]) -> str:
    return f"command = {json.dumps(argv)}\ntimeout_s = 60\n"


def test_a_store_selection_is_materialised_hashed_and_validated(tmp_path):
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    ok = '["/bin/sh", "-c", "true"]'
    (settings.home / "worker.toml").write_text(
        "grace_s = 0.2\n[stages.validate]\n" + _stage([sys.executable, "-m", "agent_rl_sandbox.worker.validate_stage"])
        + "".join(f"[stages.{n}]\ncommand = {ok}\ntimeout_s = 20\n" for n in ("baseline", "train", "post_eval"))
        + "[stages.gate]\ncommand = [\"/bin/sh\", \"-c\", \"exit 1\"]\ntimeout_s = 20\n"
    )  # fmt: skip
    model = tmp_path / "model"  # a model folder by its files (training_request refuses any other folder)
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "tokenizer_config.json").write_text("{}")
    w, services = build_worker(settings, lease_s=30)
    try:
        for variant in ("claim-before-edit/train-2", "claim-before-edit/train-3"):
            ep = play_task_script(services.sandbox, variant, "oracle", agent="base")
            assert ep.finish.get("reward") == 1.0, ep.finish
        bad = play_task_script(services.sandbox, "claim-before-edit/train-2", "known_bad", agent="base")
        assert bad.finish["passed"] is False and bad.finish["reward"] < 1.0, bad.finish  # not SFT material
        spec = JobSpec.model_validate(
            {
                "route": "sft", "trainer": "sft", "base_model": str(model),
                "dataset": {"kind": "store", "export": "sft", "behaviour": "claim-before-edit"},
                "gate": {"behaviour": "claim-before-edit"}, "reason": "teach claiming from the store",
            }
        )  # fmt: skip
        req = services.jobs.request(spec, AGENT)
        jid = req.job.job_id
        services.jobs.approve(jid, req.job.spec_hash, who="alice", note="store selection")
        # an episode that ends after the request is not in the approved job's data (red team, session 4:
        # the selection bound no rows, so later trajectories joined it)
        late = play_task_script(services.sandbox, "claim-before-edit/train-2", "oracle", agent="base")
        assert late.finish.get("reward") == 1.0, late.finish
        assert w.run(once=True) == 1
        job = services.jobs.repo.get(jid)
        ws = settings.jobs_dir / jid
        run_log = (ws / "run.log").read_text()
        assert (job.state, job.reason) == ("gate_failed", "gate stage exit 1"), run_log
        doc = json.loads((ws / "job.json").read_text())
        ds = doc["dataset"]
        assert ds["selection"]["kind"] == "store" and ds["selection"]["behaviour"] == "claim-before-edit"
        data = ws / "dataset"
        assert str(data) in ds["path"]  # materialised inside the job workspace
        rows = [json.loads(line) for line in open(ds["path"], encoding="utf-8")]
        assert len(rows) == 2 and all(r["messages"] for r in rows)  # the two passing episodes only
        assert ds["sha256"] == hashlib.sha256(open(ds["path"], "rb").read()).hexdigest()
        report = json.loads((ws / "dataset_report.json").read_text())  # the validate stage ran on it
        assert report["ok"] and report["rows"] == 2 and report["errors"] == [], report
        assert "stage validate: ok" in run_log
        (row,) = read_results(settings.jobs_dir / "results.csv")
        assert row["job_id"] == jid and row["dataset_hash"] == ds["sha256"]
        # the model folder the human approved (its digest is in the spec) changed before the worker ran
        again = services.jobs.request(spec, AGENT)
        services.jobs.approve(again.job.job_id, again.job.spec_hash, who="alice", note="same model")
        (model / "config.json").write_text('{"auto_map": {"AutoModel": "evil.Model"}}')
        assert w.run(once=True) == 1
        swapped = services.jobs.repo.get(again.job.job_id)
        assert swapped.state == "failed" and swapped.reason.startswith("base_model_changed: "), swapped.reason
        assert not (settings.jobs_dir / again.job.job_id / "dataset_report.json").exists()  # no stage ran
    finally:
        services.close()

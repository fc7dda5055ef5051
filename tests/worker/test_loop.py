"""The worker loop with real stage subprocesses on a real store: the full stage order and state
path, results.csv, the shipped default (training not installed), stage failures and timeouts,
cancel mid-stage, restart never re-running a job, a SIGKILLed worker's job recovered as
worker_lost with its processes killed, and two worker processes on PostgreSQL across 50 jobs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from worker_jobs import dataset_file, queued_job

from agent_rl_sandbox.tools.jobs import JobRepository
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.worker import Worker, load_worker_config, parse_worker_config, read_results
from agent_rl_sandbox.worker._reap import read_proc

ROOT = Path(__file__).resolve().parents[2]


def _stage(script: str) -> str:
    return json.dumps(["/bin/sh", "-c", script])


def _config(ledger: Path, **override: str) -> str:
    """Every stage appends '<job> <stage> <worker pid>' to the ledger; baseline/post_eval write scores."""
    mark = f'echo "$AGENT_RL_SANDBOX_JOB_ID $AGENT_RL_SANDBOX_STAGE $PPID" >> {ledger}'
    scripts = {
        "validate": mark,
        "baseline": mark + """; echo '{"baseline": 0.4}' > "$AGENT_RL_SANDBOX_SCORES\"""",
        "train": mark + """; echo '{"peft_type": "LORA"}' > "$AGENT_RL_SANDBOX_ADAPTER_DIR/adapter_config.json\"""",
        "post_eval": mark + """; echo '{"baseline": 0.4, "final": 0.75}' > "$AGENT_RL_SANDBOX_SCORES\"""",
        "gate": mark,
        **override,
    }
    return "grace_s = 0.2\n" + "".join(
        f"[stages.{n}]\ncommand = {_stage(s)}\ntimeout_s = 20\n" for n, s in scripts.items() if s
    )


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'store.db'}")
    yield s
    s.close()


def _worker(store, tmp_path, toml: str, **kw) -> Worker:
    cfg = parse_worker_config(toml, source="test")
    return Worker(JobRepository(store.engine), cfg, tmp_path / "jobs", subreaper=False, **kw)


def _ledger(path: Path) -> list[tuple[str, str, str]]:
    return [tuple(line.split()) for line in path.read_text().splitlines()] if path.exists() else []


def test_full_pipeline_to_gate_passed_and_results_row(store, tmp_path):
    repo = JobRepository(store.engine)
    data, sha = dataset_file(tmp_path / "data")
    jid = queued_job(repo, data, sha)
    passed = []
    w = _worker(store, tmp_path, _config(tmp_path / "ledger"), on_gate_passed=lambda j, ws: passed.append(j.job_id))
    assert w.run(once=True) == 1
    job = repo.get(jid)
    assert job.state == "gate_passed" and passed == [jid]
    assert [e.to_state for e in repo.events(jid)] == [
        "awaiting_approval", "approved", "queued", "running", "succeeded", "evaluating", "gate_passed",
    ]  # fmt: skip
    assert [s for _, s, _ in _ledger(tmp_path / "ledger")] == ["validate", "baseline", "train", "post_eval", "gate"]
    ws = tmp_path / "jobs" / jid
    doc = json.loads((ws / "job.json").read_text())
    assert doc["spec_hash"] == job.spec_hash and doc["approval"]["by"] == "alice" and doc["dataset"]["sha256"] == sha
    assert (ws / "adapter" / "adapter_config.json").exists()
    assert "stage gate: ok" in (ws / "run.log").read_text()
    (row,) = read_results(tmp_path / "jobs" / "results.csv")
    assert (row["job_id"], row["status"], row["gate_verdict"], row["dataset_hash"]) == (
        jid,
        "gate_passed",
        "gate_passed",
        sha,
    )
    assert (row["baseline"], row["final_score"], row["improvement"]) == ("0.4", "0.75", "0.35")
    assert row["workspace"] == str(ws) and row["trainer"] == "sft" and float(row["duration_s"]) > 0
    # a restarted worker finds nothing to run: the job never runs twice
    assert _worker(store, tmp_path, _config(tmp_path / "ledger")).run(once=True) == 0
    assert len(_ledger(tmp_path / "ledger")) == 5


def test_shipped_default_validates_then_runs_the_baseline_stage(store, tmp_path):
    repo = JobRepository(store.engine)
    data, sha = dataset_file(tmp_path / "data")
    jid = queued_job(repo, data, sha)
    cfg = load_worker_config(tmp_path / "nohome")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    w = Worker(repo, cfg, tmp_path / "jobs", subreaper=False, base_env=env)
    assert w.run(once=True) == 1
    job = repo.get(jid)
    # the baseline stage refuses the test spec's base model before it opens any store
    assert job.state == "failed" and job.reason.startswith("stage_failed:baseline: exit 2"), job.reason
    assert "/models/tiny" in job.reason and "not a local model folder" in job.reason
    log = (tmp_path / "jobs" / jid / "run.log").read_text()
    assert "stage validate: ok" in log and "matches" in log


@pytest.mark.parametrize(
    "override, state, reason",
    [
        ({"gate": "exit 1"}, "gate_failed", "gate stage exit 1"),
        ({"gate": "exit 7"}, "failed", "stage_failed:gate: exit 7"),
        ({"train": "exit 3"}, "failed", "stage_failed:train: exit 3"),
        ({"validate": "trap '' TERM; sleep 60"}, "failed", "stage_timeout:validate"),
    ],
)
def test_stage_outcomes(store, tmp_path, override, state, reason):
    repo = JobRepository(store.engine)
    data, sha = dataset_file(tmp_path / "data")
    jid = queued_job(repo, data, sha)
    toml = _config(tmp_path / "ledger", **override).replace("timeout_s = 20", "timeout_s = 1.5")
    _worker(store, tmp_path, toml).run(once=True)
    job = repo.get(jid)
    assert (job.state, job.reason) == (state, reason)
    assert read_results(tmp_path / "jobs" / "results.csv")[0]["status"] == state


def test_cancel_mid_stage_stops_it(store, tmp_path):
    repo = JobRepository(store.engine)
    data, sha = dataset_file(tmp_path / "data")
    jid = queued_job(repo, data, sha)
    pidfile = tmp_path / "train.pid"
    toml = _config(tmp_path / "ledger", train=f"trap '' TERM; echo $$ > {pidfile}; sleep 60")
    w = _worker(store, tmp_path, toml, lease_s=1.2)

    def cancel():
        while not pidfile.exists():
            time.sleep(0.05)
        repo.transition(jid, "cancelled", "agent", "not needed", expect_from="running", who="agent-a")

    t = threading.Thread(target=cancel)
    t.start()
    t0 = time.monotonic()
    w.run(once=True)
    t.join()
    assert time.monotonic() - t0 < 15
    assert repo.get(jid).state == "cancelled"
    info = read_proc(int(pidfile.read_text()))
    assert info is None or info.state == "Z"
    assert read_results(tmp_path / "jobs" / "results.csv")[0]["status"] == "cancelled"


def _cli_worker(home: Path, url: str, *args: str) -> subprocess.Popen:
    env = {
        "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HOME": str(home),
        "AGENT_RL_SANDBOX_HOME": str(home), "AGENT_RL_SANDBOX_DATABASE_URL": url,
    }  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "worker", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_sigkilled_worker_job_is_recovered_and_its_processes_killed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    url = f"sqlite:///{home / 'store.db'}"
    store = Store(url)
    try:
        repo = JobRepository(store.engine)
        data, sha = dataset_file(tmp_path / "data")
        jid = queued_job(repo, data, sha)
        pids = tmp_path / "pids"
        hang = f"trap '' TERM; setsid sh -c 'trap \"\" TERM; echo $$ >> {pids}; exec sleep 300' & echo $$ >> {pids}; sleep 300"
        (home / "worker.toml").write_text(_config(tmp_path / "ledger", validate=hang))
        proc = _cli_worker(home, url, "--once", "--lease-seconds", "1")
        deadline = time.monotonic() + 60
        while not (pids.exists() and len(pids.read_text().split()) == 2):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stdout.read() if proc.poll() else ""
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert repo.get(jid).state == "running"  # the dead worker left its lease behind
        time.sleep(1.2)  # the lease expires
        w = Worker(repo, parse_worker_config(_config(tmp_path / "ledger"), source="t"), home / "jobs", subreaper=False)
        assert w.run(once=True) == 0  # recovered, not run again
        job = repo.get(jid)
        assert job.state == "failed" and job.reason.startswith("worker_lost")
        for pid in map(int, pids.read_text().split()):
            info = read_proc(pid)
            assert info is None or info.state == "Z", f"{pid} survived"
        assert _ledger(tmp_path / "ledger") == []
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.postgres
def test_two_worker_processes_on_postgres_never_run_a_job_twice(tmp_path, pg_url):
    home = tmp_path / "home"
    home.mkdir()
    store = Store(pg_url)
    try:
        repo = JobRepository(store.engine)
        data, sha = dataset_file(tmp_path / "data")
        ids = {queued_job(repo, data, sha) for _ in range(50)}
        ledger = tmp_path / "ledger"
        mark = f'echo "$AGENT_RL_SANDBOX_JOB_ID $AGENT_RL_SANDBOX_STAGE $PPID" >> {ledger}'
        (home / "worker.toml").write_text(
            f"grace_s = 0.2\n[stages.validate]\ncommand = {_stage(mark)}\n[stages.gate]\ncommand = {_stage(mark)}\n"
            + "".join(f"[stages.{n}]\ncommand = {_stage('true')}\n" for n in ("baseline", "train", "post_eval"))
        )
        workers = [_cli_worker(home, pg_url, "--once", "--poll-seconds", "0.2") for _ in range(2)]
        for p in workers:
            out, _ = p.communicate(timeout=240)
            assert p.returncode == 0, out
        rows = _ledger(ledger)
        for stage in ("validate", "gate"):
            assert sorted(j for j, s, _ in rows if s == stage) == sorted(ids)  # each job once, none twice
        assert all(repo.get(j).state == "gate_passed" for j in ids)
        results = read_results(home / "jobs" / "results.csv")
        assert sorted(r["job_id"] for r in results) == sorted(ids)
        by_worker = {pid for _, _, pid in rows}
        print(f"jobs per worker pid: { {p: sum(1 for _, s, q in rows if q == p and s == 'gate') for p in by_worker} }")
    finally:
        store.close()


def test_build_worker_registers_the_gate_passing_adapter_as_a_candidate(tmp_path):
    from agent_rl_sandbox.settings import Settings
    from agent_rl_sandbox.tools.adapters import content_hash
    from agent_rl_sandbox.worker import build_worker

    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    (settings.home / "worker.toml").write_text(_config(tmp_path / "ledger"))
    w, services = build_worker(settings, lease_s=30)
    try:
        data, sha = dataset_file(tmp_path / "data")
        jid = queued_job(services.jobs.repo, data, sha)
        assert w.run(once=True) == 1
        (a,) = services.adapters.list()
        assert (a.job_id, a.state, a.behaviour) == (jid, "candidate", "claim-before-edit")
        assert a.content_hash == content_hash(settings.jobs_dir / jid / "adapter")
        assert a.gate_report["scores"] == {"baseline": 0.4, "final": 0.75}
    finally:
        services.close()

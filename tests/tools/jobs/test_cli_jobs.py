"""`agent-rl-sandbox jobs list|show|approve|reject|cancel` on SQLite and PostgreSQL, as a human runs
it: show prints what is approved (spec, hash, dataset summary, caps, events); approve is bound to the
hash, refuses without one in a non-interactive shell and asks for it on a terminal; decisions record
who (AGENT_RL_SANDBOX_APPROVER or the OS user) and a note; refusals exit 2 with one error line."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller

ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
runner = CliRunner()


@pytest.fixture
def world(tmp_path, store_url, monkeypatch):
    """A store holding three requests of one agent; the CLI's environment points at it."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "sft.jsonl").write_text((json.dumps(ROW) + "\n") * 2)
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_RL_SANDBOX_DATABASE_URL", store_url)
    monkeypatch.setenv("AGENT_RL_SANDBOX_APPROVER", "alice")
    monkeypatch.setenv("COLUMNS", "200")
    s = Services.build(Settings(home=home, database_url=store_url, data_dirs=(data,), models=("tiny-model",)))
    spec = JobSpec.model_validate(
        {
            "route": "sft",
            "trainer": "sft",
            "base_model": "tiny-model",
            "dataset": {"kind": "file", "path": str(data / "sft.jsonl")},
            "gate": {"behaviour": "claim-before-edit"},
            "caps": {"max_steps": 50},
            "reason": "teach claiming",
        }
    )
    jobs = [s.jobs.request(spec, Caller.agent("mcp:agent-a")).job for _ in range(3)]
    yield s, home, jobs
    s.close()


def _cli(*args: str, home: Path, input: str | None = None):
    return runner.invoke(app, [*args, "--home", str(home)], input=input)


def test_list_and_show_print_what_a_human_decides_on(world):
    s, home, jobs = world
    r = _cli("jobs", "list", home=home)
    assert r.exit_code == 0, r.output
    assert all(j.job_id in r.output for j in jobs) and "3 of 3 job(s)" in r.output
    r = _cli("jobs", "list", "--json", "--state", "awaiting_approval", home=home)
    assert r.exit_code == 0 and json.loads(r.output)["total"] == 3
    r = _cli("jobs", "list", "--state", "nonsense", home=home)
    assert r.exit_code == 2 and "unknown state" in r.output

    j = jobs[0]
    r = _cli("jobs", "show", j.job_id, home=home)
    assert r.exit_code == 0, r.output
    assert f"spec hash: {j.spec_hash}" in r.output
    assert '"base_model": "tiny-model"' in r.output and "dataset: valid, 2 rows" in r.output
    assert '"max_steps": 50' in r.output and "baseline: unknown" in r.output
    assert f"jobs approve {j.job_id} --hash {j.spec_hash}" in r.output
    assert "awaiting_approval" in r.output and "mcp:agent-a" in r.output
    doc = json.loads(_cli("jobs", "show", j.job_id, "--json", home=home).output)
    assert doc["spec_hash"] == j.spec_hash and doc["events"][0]["to_state"] == "awaiting_approval"
    r = _cli("jobs", "show", "job_000000000000", home=home)
    assert r.exit_code == 2 and "unknown job" in r.output


def test_approve_is_bound_to_the_hash_and_refuses_a_non_interactive_shell_without_one(world):
    s, home, jobs = world
    j = jobs[0]
    r = _cli("jobs", "approve", j.job_id, home=home, input=j.spec_hash + "\n")
    assert r.exit_code == 2 and "not interactive" in r.output and "--hash" in r.output
    r = _cli("jobs", "approve", j.job_id, "--hash", "0" * 64, home=home)
    assert r.exit_code == 2 and "nothing was approved" in r.output
    assert s.jobs.repo.get(j.job_id).state == "awaiting_approval"
    r = _cli("jobs", "approve", j.job_id, "--hash", j.spec_hash, "--note", "small and safe", home=home)
    assert r.exit_code == 0, r.output
    got = s.jobs.repo.get(j.job_id)
    assert got.state == "queued" and got.decided_by == "alice" and got.decision_note == "small and safe"
    assert got.approved_hash == j.spec_hash
    r = _cli("jobs", "approve", j.job_id, "--hash", j.spec_hash, home=home)
    assert r.exit_code == 2 and "is queued" in r.output
    r = _cli("jobs", "show", j.job_id, home=home)
    assert "decided by alice" in r.output and "approved by alice: small and safe" in r.output


def test_reject_modify_and_cancel_and_no_approval_after_them(world):
    s, home, jobs = world
    r = _cli("jobs", "reject", jobs[0].job_id, "--note", "too big", home=home)
    assert r.exit_code == 0 and s.jobs.repo.get(jobs[0].job_id).state == "rejected"
    r = _cli("jobs", "reject", jobs[1].job_id, "--modify", "--note", '{"caps": {"max_steps": 10}}', home=home)
    assert r.exit_code == 0
    assert s.jobs.repo.get(jobs[1].job_id).reason.startswith("modify by alice")
    r = _cli("jobs", "cancel", jobs[2].job_id, home=home)
    assert r.exit_code == 0 and s.jobs.repo.get(jobs[2].job_id).state == "cancelled"
    assert s.jobs.events(jobs[2].job_id)[-1].actor == "human"
    for j, state in zip(jobs, ("rejected", "rejected", "cancelled"), strict=True):
        r = _cli("jobs", "approve", j.job_id, "--hash", j.spec_hash, home=home)
        assert r.exit_code == 2 and f"is {state}" in r.output, r.output
    r = _cli("jobs", "cancel", jobs[2].job_id, home=home)
    assert r.exit_code == 2 and "final" in r.output


def test_jobs_list_piped_at_80_columns_prints_the_whole_reason(world):
    """Fresh user, session 5: the reason column was cut to 60 characters (and by rich at 80 columns)."""
    s, home, jobs = world
    note = "too big for this week's budget: " + " ".join(f"word{i}" for i in range(30)) + " end-of-note"
    assert _cli("jobs", "reject", jobs[0].job_id, "--note", note, home=home).exit_code == 0
    reason = s.jobs.repo.get(jobs[0].job_id).reason
    assert reason and note in reason and len(reason) > 150
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    p = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "jobs", "list", "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "\N{HORIZONTAL ELLIPSIS}" not in p.stdout
    row = next(ln for ln in p.stdout.splitlines() if jobs[0].job_id in ln)
    assert reason in row, p.stdout


def test_approve_asks_for_the_hash_on_a_terminal(world, store_url):
    s, home, jobs = world
    j = jobs[0]
    master, slave = pty.openpty()
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
        "AGENT_RL_SANDBOX_DATABASE_URL": store_url,
        "AGENT_RL_SANDBOX_APPROVER": "bob",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "jobs", "approve", j.job_id, "--home", str(home)],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    os.close(slave)
    os.write(master, (j.spec_hash + "\n").encode())
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 0, out.decode()
    got = s.jobs.repo.get(j.job_id)
    assert got.state == "queued" and got.decided_by == "bob"

"""The stage runner with real subprocesses: exit statuses, the timeout, cancel, and the sweep that
leaves no process of the job alive, checked by pid (children that ignore SIGTERM, ones that
``setsid``, double-forked orphans, one that cleared its environment, and daemons of a stage that
exited 0)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent_rl_sandbox.worker import JOB_ENV, become_subreaper, job_processes, run_stage
from agent_rl_sandbox.worker._reap import read_proc

# Every escape at once; each process appends its pid to ./pids, then the script writes ./ready.
ESCAPES = r"""
trap '' TERM
sleep 300 & echo $! >> pids
setsid sh -c 'trap "" TERM; echo $$ >> pids; exec sleep 300' &
( sh -c 'trap "" TERM; echo $$ >> pids; exec sleep 300' & )
env -i /usr/bin/setsid /bin/sh -c 'trap "" TERM; echo $$ >> pids; exec /bin/sleep 300' &
echo $$ >> pids
while [ "$(wc -l < pids)" -lt 5 ]; do sleep 0.05; done
touch ready
"""


@pytest.fixture(autouse=True, scope="module")
def _subreaper():
    assert become_subreaper()
    yield
    become_subreaper(False)  # other tests' orphans must go to init, not linger here as zombies


def _alive(pid: int) -> bool:
    info = read_proc(pid)
    return info is not None and info.state != "Z"


def _job_id(tmp_path: Path) -> str:
    """A job id unique to one test: the sweep takes every process on the machine whose marker names
    the job, so two tests (pytest-xdist workers, other runs) sharing an id would kill each other's
    stages."""
    return f"job-{tmp_path.name}-{os.getpid()}"


def _run(tmp_path: Path, script: str, **kw):
    (tmp_path / "stage.sh").write_text(script)
    return run_stage(
        "train",
        ["/bin/sh", str(tmp_path / "stage.sh")],
        job_id=kw.pop("job_id", _job_id(tmp_path)),
        cwd=tmp_path,
        log_path=tmp_path / "run.log",
        **kw,
    )


def test_exit_statuses_and_log(tmp_path):
    ok = _run(tmp_path, 'echo "out $AGENT_RL_SANDBOX_STAGE $AGENT_RL_SANDBOX_JOB_ID"; echo err >&2', timeout_s=20)
    assert (ok.status, ok.exit_code) == ("ok", 0)
    assert (tmp_path / "run.log").read_text().splitlines() == [f"out train {_job_id(tmp_path)}", "err"]
    bad = _run(tmp_path, "exit 3", timeout_s=20)
    assert (bad.status, bad.exit_code) == ("failed", 3)


def test_hung_stage_and_every_escapee_die_at_the_timeout(tmp_path):
    t0 = time.monotonic()
    res = _run(tmp_path, ESCAPES + "sleep 300\n", timeout_s=3.0, grace_s=0.3)
    assert res.status == "timeout"
    assert res.exit_code == -9  # the root ignored SIGTERM, so SIGKILL it was
    assert (tmp_path / "ready").exists(), (tmp_path / "run.log").read_text()
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 5
    assert set(pids) <= res.killed_pids
    assert [p for p in pids if _alive(p)] == []
    assert time.monotonic() - t0 < 3.0 + 0.3 + 4.0
    assert job_processes(_job_id(tmp_path), pgid=None, since=0) == set()


def test_daemons_of_a_stage_that_exited_zero_are_killed(tmp_path):
    res = _run(tmp_path, ESCAPES + "while [ ! -e ready ]; do sleep 0.05; done\nexit 0\n", timeout_s=20, grace_s=0.3)
    assert res.status == "ok"
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 5
    assert [p for p in pids if _alive(p)] == []


def test_cancel_stops_the_stage(tmp_path):
    started = time.monotonic()
    res = _run(
        tmp_path,
        "trap '' TERM\nsleep 300 & echo $! > pids\nsleep 300\n",
        timeout_s=60,
        grace_s=0.2,
        should_cancel=lambda: (tmp_path / "pids").exists() and time.monotonic() - started > 0.3,
    )
    assert res.status == "cancelled"
    assert not _alive(int((tmp_path / "pids").read_text()))


def test_other_jobs_processes_are_left_alone(tmp_path):
    """The sweep is scoped: a process of another job (its own marker, not our descendant) survives."""
    import subprocess

    other = subprocess.Popen(
        ["/bin/sleep", "30"], env={**os.environ, JOB_ENV: f"job-other-{os.getpid()}"}, start_new_session=True
    )
    try:
        res = _run(tmp_path, "sleep 300\n", timeout_s=0.5, grace_s=0.1)
        assert res.status == "timeout"
        assert _alive(other.pid)
    finally:
        other.kill()
        other.wait()


def test_a_missing_command_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        run_stage("train", [str(tmp_path / "nope")], job_id="j", cwd=tmp_path, log_path=tmp_path / "l", timeout_s=1)

"""Running one stage: a subprocess in its own session and process group, with a timeout, a cancel
check, and a sweep that leaves no process of the job behind.

:func:`run_stage` starts ``argv`` (never a shell) in the job's workspace with stdout and stderr
appended to a log file, and the environment marker ``AGENT_RL_SANDBOX_JOB_ID`` set. It waits in
steps of at most 50 ms (returning as soon as the stage exits); when the stage passes its timeout or ``should_cancel()`` turns true it sends ``SIGTERM`` to
the group and to every other process of the job, waits the grace period, then ``SIGKILL``s what is
left (:func:`~agent_rl_sandbox.worker._reap.kill_job_processes`). After every stage, even one that
exited 0, the same sweep runs, so a daemon a stage left running dies too. The workspace is kept.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent_rl_sandbox.worker._reap import JOB_ENV, clock_ticks_now, kill_job_processes

StageStatus = Literal["ok", "failed", "timeout", "cancelled"]
"""``ok``: exit 0. ``failed``: any other exit. ``timeout``: killed at its timeout. ``cancelled``:
killed because the job was cancelled."""


@dataclass(frozen=True)
class StageResult:
    """What one stage run came to."""

    name: str
    status: StageStatus
    exit_code: int | None
    """The stage process's exit status; negative for a signal (``-9``: SIGKILL)."""
    duration_s: float
    killed_pids: frozenset[int] = field(default_factory=frozenset)
    """Every pid the sweep signalled (empty when the stage left nothing behind)."""


def run_stage(
    name: str,
    argv: Sequence[str],
    *,
    job_id: str,
    cwd: Path,
    log_path: Path,
    timeout_s: float,
    grace_s: float = 5.0,
    env: Mapping[str, str] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    poll_s: float = 0.05,
) -> StageResult:
    """Run one stage to its end, its timeout or a cancel; see the module docstring.

    ``env`` is the stage's whole environment (default: the worker's), to which the job marker and
    ``AGENT_RL_SANDBOX_STAGE`` are added. Raises ``FileNotFoundError`` / ``PermissionError`` when
    ``argv[0]`` cannot be started (nothing is left running then)."""
    full_env = dict(os.environ if env is None else env)
    full_env[JOB_ENV] = job_id
    full_env["AGENT_RL_SANDBOX_STAGE"] = name
    since = max(0, clock_ticks_now() - 1)
    start = time.monotonic()
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    pgid = proc.pid  # a new session's leader is its group's leader
    status: StageStatus | None = None
    try:
        while True:
            try:  # returns as soon as the stage exits, else after poll_s
                proc.wait(timeout=min(poll_s, max(0.001, timeout_s - (time.monotonic() - start))))
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() - start >= timeout_s:
                status = "timeout"
                break
            if should_cancel is not None and should_cancel():
                status = "cancelled"
                break
    except BaseException:  # SystemExit from SIGTERM, KeyboardInterrupt: the stage dies with the worker
        kill_job_processes(job_id, pgid=pgid, since=since, root=proc.pid, grace_s=min(grace_s, 1.0))
        proc.wait()
        raise
    # The sweep runs before the root is reaped when it was killed, so the group id cannot be reused.
    killed = kill_job_processes(job_id, pgid=pgid, since=since, root=proc.pid, grace_s=grace_s if status else 0.0)
    code = proc.wait()
    if status is None:
        status = "ok" if code == 0 else "failed"
    return StageResult(
        name=name, status=status, exit_code=code, duration_s=time.monotonic() - start, killed_pids=frozenset(killed)
    )

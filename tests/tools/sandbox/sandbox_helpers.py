"""Helpers shared by the sandbox tests (a module with a unique name, importable from each test file)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_rl_sandbox.schemas.tools import SandboxExecInput, SandboxResetInput
from agent_rl_sandbox.tools.sandbox import detect_isolation
from agent_rl_sandbox.tools.sandbox._runner import pids_of_uid

AUTO = detect_isolation("auto")
HAS_BWRAP = AUTO.kind == "bwrap"
IS_ROOT = os.geteuid() == 0
IN_CI = os.environ.get("CI") == "true"

requires_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not IN_CI, reason="bubblewrap not installed (.ci/run installs it; CI must not skip)"
)
requires_root = pytest.mark.skipif(not IS_ROOT, reason="switching to a sandbox uid needs root")


def write_task(
    root: Path,
    task_id: str = "user/demo",
    *,
    files: dict[str, str] | None = None,
    verifier: str = "grep -q 42 answer.txt",
    toml_extra: str = "",
    limits: str = "",
    reward: str | None = None,
    oracle: str | None = None,
    known_bad: str | None = None,
) -> Path:
    """Build a small, valid user task folder under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "repo").mkdir(exist_ok=True)
    for rel, text in (
        files or {"answer.txt": "0\n", "tests/test_answer.py": "def test_ok():\n    assert True\n"}
    ).items():
        p = root / "repo" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test.sh").write_text(f'#!/usr/bin/env bash\nset -u\ncd "$SANDBOX_REPO" || exit 2\n{verifier}\n')
    (root / "instruction.md").write_text("# Demo\n\nPut 42 in answer.txt.\n")
    reward = reward or textwrap.dedent(
        """
        [reward]
        aggregation = "all"
        [[reward.criteria]]
        id = "verifier_passes"
        type = "verifier_exit_code"
        """
    )
    (root / "task.toml").write_text(
        f'id = "{task_id}"\nbehaviour = "demo"\n{toml_extra}\n' + (f"[limits]\n{limits}\n" if limits else "") + reward
    )
    if oracle is not None or known_bad is not None:
        (root / "solution").mkdir(exist_ok=True)
        (root / "solution" / "oracle.json").write_text(oracle or "{}")
        (root / "solution" / "known_bad.json").write_text(known_bad or "{}")
    return root


def reset(services, task_id: str = "claim-before-edit"):
    return services.sandbox.reset(SandboxResetInput(task_id=task_id, agent_name="test"))


def run(services, sandbox_id: str, command: str, **kw):
    return services.sandbox.exec(SandboxExecInput(sandbox_id=sandbox_id, command=command, **kw))


def steps(services, sandbox_id: str):
    row = services.store.sandboxes.get(sandbox_id)
    return services.store.trajectories.get(row.session_id).steps


@contextlib.contextmanager
def peak_processes(uid: int):
    """Sample how many processes ``uid`` has every 20 ms while the block runs; yields a one-item
    list holding the peak seen so far."""
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], len(pids_of_uid(uid)))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield peak
    finally:
        stop.set()
        watcher.join()


CRASHED_SERVER = textwrap.dedent(
    """
    import os, sys, threading, time
    from pathlib import Path
    from agent_rl_sandbox.schemas.task import Limits
    from agent_rl_sandbox.tools.sandbox._runner import (
        Isolation, LiveProcesses, UidLedger, describe_isolation, pids_of_uid, run_command,
    )
    folder, uid, cwd = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    live = LiveProcesses(UidLedger(folder))
    iso = Isolation("none", describe_isolation("none", True), switch_user=True)
    threading.Thread(
        target=run_command,
        args=(sys.argv[4],),
        kwargs=dict(cwd=cwd, limits=Limits(wall_seconds=300), isolation=iso, uid=uid, live=live),
        daemon=True,
    ).start()
    for _ in range(500):
        if len(pids_of_uid(uid)) >= 3:
            break
        time.sleep(0.01)
    print(len(pids_of_uid(uid)), flush=True)
    os._exit(0)  # a crash: no finally, no end-of-run kill
    """
)
"""A server process that starts a command of ``uid`` (plain-subprocess isolation, as the uid)
through a ledger in ``folder`` and dies while it runs."""

BACKGROUND = "( setsid bash -c 'sleep 300 & sleep 301' & ); sleep 302"
"""A command that leaves a double-forked, ``setsid``-ed background process (two sleeps) behind."""


def crash_a_server_mid_run(folder: Path, uid: int, cwd: Path) -> None:
    """Run :data:`CRASHED_SERVER` with :data:`BACKGROUND` for ``uid`` in ``cwd`` (owned by the
    uid): afterwards the double-forked, ``setsid``-ed processes survive (the direct child died with
    its parent) and the ledger holds the dead run's marker, unlocked."""
    out = subprocess.run(
        [sys.executable, "-c", CRASHED_SERVER, str(folder), str(uid), str(cwd), BACKGROUND],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.returncode == 0 and int(out.stdout) >= 3, out.stdout + out.stderr
    for _ in range(300):  # the direct child gets its parent-death signal
        if len(pids_of_uid(uid)) < int(out.stdout):
            break
        time.sleep(0.01)
    assert len(pids_of_uid(uid)) >= 2, "the setsid-ed sleeps survive the crash"


def as_nobody(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a forked child that dropped to ``nobody`` (uid and gid 65534, so file modes
    bind it, as they bind a server that is not root); its answer comes back through JSON."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(fn()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    os.waitpid(pid, 0)
    return json.loads(got)

"""Running the real hook commands in subprocesses, as a client does, and draining their queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agent_rl_sandbox.tools.store import Store

ROOT = Path(__file__).resolve().parents[2]


def hook_env(home: Path, **extra: str) -> dict:
    """A client's environment: a few basics, the home, and this checkout on PYTHONPATH. The background
    drainer lingers 0 s (it exits as soon as the queue is empty, so no process outlives a test)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")}
    env.update(
        AGENT_RL_SANDBOX_HOME=str(home),
        AGENT_RL_SANDBOX_HOOK_LINGER="0",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    )
    env.update(extra)
    return env


def drainer_processes(home: Path) -> list[int]:
    """Pids of live background drainers (``python -m agent_rl_sandbox.agents._drain``) started for
    ``home``, read from ``/proc`` (a drainer a hook spawned may still be starting up, before it takes
    the drain lock, so the lock alone cannot say that none is left)."""
    want = f"AGENT_RL_SANDBOX_HOME={home}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            if b"agent_rl_sandbox.agents._drain" in cmd and want in (entry / "environ").read_bytes().split(b"\0"):
                if (entry / "stat").read_text().split(")")[-1].split()[0] != "Z":
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def run_hook(home: Path, event, client: str = "claude-code", **env) -> tuple[subprocess.CompletedProcess, float]:
    """One hook process (``python -m agent_rl_sandbox.cli hook <client>``) with ``event`` on stdin."""
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", client],
        input=raw,
        capture_output=True,
        env=hook_env(home, **env),
        timeout=60,
    )
    return proc, time.perf_counter() - t0


def drain(home: Path, *args: str, **env) -> subprocess.CompletedProcess:
    """``agent-rl-sandbox hook drain`` (waits for a background drainer, then folds what is left)."""
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "drain", "--wait", "60", *args],
        capture_output=True,
        text=True,
        env=hook_env(home, **env),
        timeout=120,
    )


def only_trajectory(store: Store):
    rows, total = store.trajectories.list()
    assert total == 1, [r.session_id for r in rows]
    return store.trajectories.get(rows[0].session_id)


def open_store(home: Path) -> Store:
    return Store(f"sqlite:///{home / 'store.db'}")

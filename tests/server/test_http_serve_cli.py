"""``agent-rl-sandbox serve --http --workers 2`` as an operator runs it: two processes on one socket
answer health checks and token-authenticated tool calls, and SIGTERM stops them all cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from http_helpers import client

from agent_rl_sandbox.tools.identities import IdentityRegistry
from agent_rl_sandbox.tools.store import Store

REPO = Path(__file__).resolve().parents[2]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_workers_serve_and_stop_on_sigterm(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    store = Store(f"sqlite:///{home / 'store.db'}")
    rec, token = IdentityRegistry(store.engine).add("alice")
    store.close()
    port = _port()
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "serve", "--http", "--port", str(port), "--workers", "2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "serve --http --workers 2 did not become healthy"
            time.sleep(0.2)

        async def calls() -> list[str]:
            async with client(base, token) as c:
                outs = [await c.call_tool("trajectory_start", {"agent_name": f"a{i}"}) for i in range(6)]
            return [o.structured_content["trajectory"]["session_id"] for o in outs if not o.is_error]

        sessions = anyio.run(calls)
        assert len(sessions) == 6
        assert httpx2.post(f"{base}/mcp", json={}, timeout=5).status_code == 401
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    store = Store(f"sqlite:///{home / 'store.db'}")
    try:
        assert set(store.trajectories.owners(sessions).values()) == {rec.identity_id}
    finally:
        store.close()

"""`serve --http` and `ui` default to different ports (8765, 8766: both run side by side), and a
port something already listens on is one `error:` line naming it, exit 2 (fresh user, session 5:
both defaulted to 8765). Through the real CLI, with a real listening socket in the way."""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from agent_rl_sandbox.cli import serve, ui

ROOT = Path(__file__).resolve().parents[2]


def test_the_defaults_differ_and_the_readme_names_both():
    http = inspect.signature(serve.serve).parameters["port"].default
    page = inspect.signature(ui.ui).parameters["port"].default
    assert (http, page) == (8765, 8766)
    readme = (ROOT / "README.md").read_text()
    assert "serve --http [--host 127.0.0.1] [--port 8765]" in readme
    assert "ui [--host 127.0.0.1] [--port 8766]" in readme and "http://127.0.0.1:8766/?token=" in readme


def test_a_taken_port_is_one_error_line_for_serve_http_and_ui(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "AGENT_RL_SANDBOX_HOME": str(tmp_path / "h")}
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        for args in (["serve", "--http", "--port", str(port)], ["ui", "--port", str(port)]):
            started = time.monotonic()
            p = subprocess.run(
                [sys.executable, "-m", "agent_rl_sandbox.cli", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert p.returncode == 2, (args, p.stdout, p.stderr)
            lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith(f"error: cannot bind 127.0.0.1:{port}: "), p.stderr
            assert "listens there" in lines[0] and "Next step: stop it or pass another --port" in lines[0]
            assert time.monotonic() - started < 60
    assert not (tmp_path / "h" / "store.db").exists()  # refused before the store was opened

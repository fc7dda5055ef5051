"""``agent-rl-sandbox config claude-code|codex --url``: the printed HTTP entries reach a real
``serve --http`` server (uvicorn, bearer tokens) once the client expands the token variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx2
import pytest
from http_helpers import running_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.identities import IdentityRegistry

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def _config(*args: str, home: Path) -> str:
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(home), "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "config", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


async def _tools(url: str, headers: dict[str, str]) -> list[str]:
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as c:
            return [t.name for t in (await c.list_tools()).tools]


async def test_printed_http_entries_connect_with_the_token(tmp_path):
    svc = Services.build(Settings(home=tmp_path / "home"))
    _, token = IdentityRegistry(svc.store.engine).add("alice")
    with running_server(svc) as base:
        url = f"{base}/mcp"
        claude = json.loads(_config("claude-code", "--file", "mcp", "--url", url, home=tmp_path / "home"))
        entry = claude["mcpServers"]["agent-rl-sandbox"]
        assert entry["type"] == "http" and entry["url"] == url and token not in json.dumps(claude)
        # Claude Code expands ${VAR} in .mcp.json headers from its environment:
        headers = {k: v.replace("${AGENT_RL_SANDBOX_TOKEN}", token) for k, v in entry["headers"].items()}
        assert "list_tasks" in await _tools(entry["url"], headers)
        codex = tomllib.loads(_config("codex", "--url", url, home=tmp_path / "home"))["mcp_servers"]["agent-rl-sandbox"]
        assert codex["url"] == url and "command" not in codex and token not in json.dumps(codex)
        # Codex sends the variable named by bearer_token_env_var as "Authorization: Bearer <value>":
        env_token = {codex["bearer_token_env_var"]: token}[codex["bearer_token_env_var"]]
        assert "list_tasks" in await _tools(codex["url"], {"Authorization": f"Bearer {env_token}"})

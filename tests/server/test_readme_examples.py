"""The README's `trajectory_log_step` example is what the server accepts: the JSON block and the
`trajectory_start` arguments are parsed out of README.md and sent through the real MCP client
(fresh user, session 5: the README had no example step)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server

pytestmark = pytest.mark.anyio

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _log_step_example() -> dict:
    blocks = re.findall(r"```json\n(.*?)```", README, flags=re.DOTALL)
    found = [json.loads(b) for b in blocks if '"session_id": "SESSION_ID"' in b]
    assert len(found) == 1, "the README has one trajectory_log_step example"
    return found[0]


def _start_example() -> dict:
    m = re.search(r"`trajectory_start`\s*\(`(\{[^`]*\})`\)", README)
    assert m, "the README shows trajectory_start's arguments"
    return json.loads(m.group(1))


async def test_the_readme_log_step_example_is_accepted(services):
    example = _log_step_example()
    async with Client(build_server(services=services)) as client:
        started = await client.call_tool("trajectory_start", _start_example())
        assert not started.is_error, started.content[0].text
        sid = started.structured_content["trajectory"]["session_id"]
        args = {**example, "session_id": sid}
        res = await client.call_tool("trajectory_log_step", args)
        assert not res.is_error, res.content[0].text
        assert res.structured_content["steps"][0]["created"] is True
        again = await client.call_tool("trajectory_log_step", args)  # the client_step_id makes a retry safe
        assert again.structured_content["steps"][0]["created"] is False
        assert again.structured_content["step_count"] == res.structured_content["step_count"]
        done = await client.call_tool("trajectory_finish", {"session_id": sid, "final_message": "stopped"})
        assert not done.is_error, done.content[0].text
    traj = services.store.trajectories.get(sid)
    want = example["step"]
    step = next(s for s in traj.steps if s.message == want["message"])
    assert step.provenance == "agent" and step.message == want["message"]
    assert step.tool_calls[0].arguments == want["tool_calls"][0]["arguments"]
    assert step.observation.results[0].content == want["observation"]["results"][0]["content"]
    assert step.exit_code == want["exit_code"] and step.outcome == want["outcome"]

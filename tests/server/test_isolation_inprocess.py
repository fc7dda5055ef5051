"""Issue 10 §4 through a real MCP client: held-out answers do not reach an agent."""

from __future__ import annotations

import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server

pytestmark = pytest.mark.anyio

HELDOUT = "claim-before-edit/heldout-1"


@pytest.fixture
def server(services):
    return build_server(services=services)


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


async def test_heldout_finish_shows_counts_only_and_agents_cannot_export_heldout(server):
    async with Client(server) as agent:
        reset = (await agent.call_tool("sandbox_reset", {"task_id": HELDOUT, "agent_name": "a"})).structured_content
        done = await agent.call_tool("sandbox_finish", {"sandbox_id": reset["sandbox_id"], "message": "done"})
        out = done.structured_content
        assert out["passed"] is False and out["verifier_output"].startswith("hidden checks failed (exit 1): 3 of 6")
        for hidden in ("python-3-12-released", "ALL CAPS", "all-caps", "[case]", "got "):
            assert hidden not in _text(done), hidden
        exported = await agent.call_tool("trajectory_export", {"format": "atif", "include_heldout": True})
        assert exported.is_error and "operator only" in _text(exported) and "Next step:" in _text(exported)

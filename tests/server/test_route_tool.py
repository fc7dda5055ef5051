"""``route_recommend`` through the real in-process MCP client: read-only, schema-valid results,
store evidence from a real sandbox run, and flagged errors that say what to pass."""

from __future__ import annotations

import jsonschema
import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server
from agent_rl_sandbox.tools.sandbox._scripted import play_task_script

pytestmark = pytest.mark.anyio


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


@pytest.fixture
def played(services):
    """One real oracle and one real known-bad episode of claim-before-edit in the store."""
    play_task_script(services.sandbox, "claim-before-edit", "oracle", agent="base")
    play_task_script(services.sandbox, "claim-before-edit", "known_bad", agent="base")
    return services


async def test_route_recommend_over_mcp(played):
    services = played
    async with Client(build_server(services=services)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        tool = tools["route_recommend"]
        assert tool.annotations.read_only_hint is True
        res = await client.call_tool("route_recommend", {"behaviour": "claim-before-edit"})
        assert not res.is_error, _text(res)
        jsonschema.validate(res.structured_content, tool.output_schema)
        out = res.structured_content
        assert out["signals"]["passing"] == {"value": 1, "source": "store"}
        assert out["signals"]["preference_pairs"]["value"] == 1
        # a pass and a fail differ: RL has variance to learn from, but two attempts prove little
        assert out["intervention"] == "agentic_grpo" and out["train_now"] is False
        assert any("need at least 6 finished attempts" in m and "(have 2)" in m for m in out["prerequisites_missing"])
        assert any("held-out" in m for m in out["prerequisites_missing"])

        res = await client.call_tool(
            "route_recommend", {"signals": {"demonstrations": 100, "base_model_params": "13B", "gpu": "T4"}}
        )
        assert not res.is_error and res.structured_content["adapter"] == "qlora"

        for args, needle in (
            ({"behaviour": "claim-first"}, "unknown behaviour"),
            ({"signals": {"base_model_params": "7"}}, "has no unit"),
            ({"signals": {"demonstrations": -1}}, "demonstrations"),
            ({"signals": {"gpu": "banana"}}, "'banana' is not a GPU this project knows (H200, H100"),
        ):
            err = await client.call_tool("route_recommend", args)
            assert err.is_error and needle in _text(err) and "Next step" in _text(err), _text(err)

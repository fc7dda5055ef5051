"""Issue 10 §3: every tool argument an agent fills is bounded (schemas/bounds.py), and a call over a
bound is refused through the real MCP client with an error naming the field and the limit, and
stores nothing."""

from __future__ import annotations

import pytest
from mcp import Client

from agent_rl_sandbox.schemas import bounds
from agent_rl_sandbox.server.app import build_server

pytestmark = pytest.mark.anyio

BIG = "x" * (10 * 1024 * 1024)


@pytest.fixture
def server(services):
    return build_server(services=services)


def text(result) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


async def _start(client) -> str:
    res = await client.call_tool("trajectory_start", {"agent_name": "bounds"})
    return res.structured_content["trajectory"]["session_id"]


@pytest.mark.parametrize(
    ("field", "step", "limit"),
    [
        ("extra", {"extra": {"blob": BIG}}, bounds.EXTRA_BYTES),
        ("metrics", {"metrics": {"blob": "x" * 20_000}}, bounds.METRICS_BYTES),
        ("observation", {"observation": {"results": [{"content": BIG}]}}, bounds.OBSERVATION_BYTES),
        (
            "tool_calls",
            {"tool_calls": [{"tool_call_id": "c1", "function_name": "f", "arguments": {"a": BIG}}]},
            bounds.TOOL_CALLS_BYTES,
        ),
    ],
)
async def test_oversized_step_field_is_refused_naming_field_and_limit(server, services, field, step, limit):
    async with Client(server) as client:
        sid = await _start(client)
        res = await client.call_tool("trajectory_log_step", {"session_id": sid, "step": step})
    assert res.is_error
    msg = text(res)
    assert f"step.{field}" in msg and f"{limit:,} bytes" in msg and "Next step" in msg, msg
    assert services.store.trajectories.summary(sid).step_count == 0


async def test_oversized_batch_is_refused_and_nothing_is_stored(server, services):
    steps = [{"message": "m", "extra": {"blob": "y" * 60_000}} for _ in range(120)]  # each fits, 7 MB in all
    async with Client(server) as client:
        sid = await _start(client)
        res = await client.call_tool("trajectory_log_step", {"session_id": sid, "steps": steps})
    assert res.is_error
    assert "steps is" in text(res) and f"{bounds.BATCH_BYTES:,} bytes" in text(res)
    assert services.store.trajectories.summary(sid).step_count == 0


async def test_oversized_tool_definitions_are_refused(server):
    tools = [{"type": "function", "function": {"name": f"t{i}", "description": "d" * 5000}} for i in range(100)]
    async with Client(server) as client:
        res = await client.call_tool("trajectory_start", {"agent_name": "a", "tool_definitions": tools})
    assert res.is_error and "tool_definitions" in text(res) and f"{bounds.TOOL_DEFINITIONS_BYTES:,}" in text(res)


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("sandbox_exec", {"sandbox_id": "sbx_x", "command": "x" * (bounds.COMMAND_CHARS + 1)}, "command"),
        (
            "sandbox_write_file",
            {"sandbox_id": "sbx_x", "path": "a", "content": "x" * (bounds.FILE_CONTENT_CHARS + 1)},
            "content",
        ),
        ("sandbox_write_file", {"sandbox_id": "sbx_x", "path": "p" * (bounds.PATH_CHARS + 1), "content": ""}, "path"),
        ("sandbox_claim", {"sandbox_id": "sbx_x", "paths": ["p" * (bounds.PATH_CHARS + 1)]}, "paths"),
        ("sandbox_finish", {"sandbox_id": "sbx_x", "message": "m" * (bounds.FINAL_MESSAGE_CHARS + 1)}, "message"),
        (
            "trajectory_finish",
            {"session_id": "s", "final_message": "m" * (bounds.FINAL_MESSAGE_CHARS + 1)},
            "final_message",
        ),
        ("trajectory_list", {"task_id": "t" * (bounds.NAME_CHARS + 1)}, "task_id"),
    ],
)
async def test_oversized_text_arguments_are_refused(server, tool, args, field):
    async with Client(server) as client:
        res = await client.call_tool(tool, args)
    assert res.is_error
    msg = text(res)
    assert field in msg and "at most" in msg and "Next step" in msg, msg

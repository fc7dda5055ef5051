"""Scripted agents: replay a task's oracle or known-bad tool-call script.

The player itself lives in :mod:`agent_rl_sandbox.tools.sandbox._scripted` (the direction test uses
it too); this module adds the caller that plays a script over a real MCP client (the demo).
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.tools.sandbox._scripted import (
    Episode,
    ScriptError,
    ToolCaller,
    play_script,
    service_caller,
)

__all__ = ["Episode", "ScriptError", "ToolCaller", "mcp_caller", "play_script", "service_caller"]


def mcp_caller(client: Any) -> ToolCaller:
    """A :data:`ToolCaller` over an ``mcp.Client`` session."""

    async def call(tool: str, args: dict[str, Any]):
        res = await client.call_tool(tool, args)
        text = "".join(getattr(b, "text", "") for b in res.content)
        return bool(res.is_error), res.structured_content, text

    return call

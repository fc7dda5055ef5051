"""What the MCP server says before any tool runs: its name, instructions, session lifespan and the
``Next step:`` middleware for the SDK's own tool errors.

Kept apart from :mod:`agent_rl_sandbox.server.app` (the tool table, which imports every schema and
domain service) so that :mod:`agent_rl_sandbox.server.lazy` can answer ``initialize`` and
``tools/list`` at start-up with the same server identity without importing any of that. Imports the
standard library only (the SDK's types only for type checking).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

SERVER_NAME = "agent-rl-sandbox"
"""The server's name in ``initialize`` (``serverInfo.name``)."""

INSTRUCTIONS = """\
agent-rl-sandbox: practise a behaviour in a disposable sandbox and get a reward from verified state.
Loop: list_tasks -> sandbox_reset(task_id) -> read the instruction -> sandbox_read_file /
sandbox_exec to inspect -> sandbox_claim the files you will change -> sandbox_write_file ->
sandbox_exec to run the tests -> sandbox_finish(message with the test command and its result;
`final_message` is the same argument, as trajectory_finish names it).
Every sandbox action is recorded for you; rewards come from the sandbox state and the hidden
verifier, never from what your final message says. trajectory_get and eval_score show the result.
There is no git inside the sandbox (its history lives outside, where commands cannot reach it):
sandbox_state gives the diff against the task's base commit. One changing call (exec, write,
claim, reset, finish) runs per sandbox at a time; a second one answers at once with a `busy`
error saying when to retry, while read-only calls (read_file, state, read_output) still answer.
Unknown argument names are refused with the closest valid name; `behavior` is read as `behaviour`.
"""

_SESSION_TOKEN = "agent_rl_sandbox.session_token"
"""Key of the per-session random token in the lifespan state."""


@asynccontextmanager
async def session_lifespan(_server: MCPServer) -> AsyncIterator[dict[str, str]]:
    """The server's lifespan: runs once per session (per stdio process, per in-process client) and
    draws the random token that names the session's owner (128 bits, never sent to the client)."""
    yield {_SESSION_TOKEN: secrets.token_urlsafe(16)}


_PYDANTIC_URL = re.compile(r"\n?\s*For further information visit https://errors\.pydantic\.dev\S*")
_SDK_PREFIX = re.compile(r"^Error executing tool (\S+?)(?::\s*|$)")
"""The MCP SDK's prefix on a tool's raised error (``Tool.run``); the server's own refusals before
the SDK runs (an unknown argument) start ``TOOL: ``, so every tool error is rewritten to that one form."""
_PYDANTIC_DETAIL = re.compile(r"\s*\[type=[^\]\n]*\]")
"""pydantic's ``[type=missing, input_value={...}, input_type=dict]`` tail: Python reprs of the
caller's own arguments, dropped (the field and the reason stay)."""


async def next_step_middleware(ctx: Any, call_next: Callable[[Any], Any]) -> Any:
    """Give the SDK's own tool errors (unknown tool, arguments failing the input schema, raised
    before our tool code runs) a ``Next step:`` like every other error, and drop pydantic's URLs.
    Every tool's error reads ``TOOL: what. Next step: ...`` (the SDK's ``Error executing tool TOOL:``
    becomes ``TOOL: ``, the form of the server's own unknown-argument refusal); an unknown tool
    stays ``Unknown tool: NAME``."""
    result = await call_next(ctx)
    if getattr(ctx, "method", None) != "tools/call" or not isinstance(result, dict) or not result.get("isError"):
        return result
    for block in result.get("content") or []:
        text = block.get("text") if isinstance(block, dict) else None
        if not isinstance(text, str):
            continue
        text = _SDK_PREFIX.sub(lambda m: f"{m.group(1)}: ", text, count=1)
        if "Next step" in text:
            block["text"] = text
            continue
        text = _PYDANTIC_DETAIL.sub("", _PYDANTIC_URL.sub("", text)).rstrip()
        if text.startswith("Unknown tool"):
            hint = "list the tools (tools/list) and call one of those names"
        elif "validation error" in text:
            hint = "fix the arguments named above to match the tool's input schema, then call again"
        else:
            hint = "read the message above; do not retry the same call unchanged"
        block["text"] = f"{text}\nNext step: {hint}"
    return result

"""Scripted agents: replay a task's oracle or known-bad tool-call script against the tools.

The same script runs over a real MCP client (the demo, over stdio) or straight against the
:class:`~agent_rl_sandbox.tools.sandbox.SandboxService` (``tasks check``). Either way the server
records every action itself; the script never logs anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.task import ScriptedTrajectory

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, dict[str, Any] | None, str]]]
"""``await call(tool, args) -> (is_error, structured_result, text)``."""


@dataclass
class Episode:
    """What a scripted episode produced. ``finish`` is the ``sandbox_finish`` result."""

    agent: str
    task_id: str
    sandbox_id: str
    session_id: str
    finish: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    """Tool errors the script met (text of each flagged error result)."""


class ScriptError(RuntimeError):
    """The script could not be played (reset failed, or it never reached ``sandbox_finish``)."""


async def play_script(
    call: ToolCaller, task_id: str, script: ScriptedTrajectory, script_dir: Path, *, agent: str
) -> Episode:
    """Reset a sandbox for ``task_id`` and play ``script``'s calls in order.

    ``sandbox_id`` is filled into each call's arguments; ``content_from`` files are read relative to
    ``script_dir``. Tool errors are collected, not raised (a careless agent is allowed to fail).
    Raises :class:`ScriptError` if the reset fails or the script has no ``sandbox_finish``.
    """
    is_error, reset, text = await call("sandbox_reset", {"task_id": task_id, "agent_name": agent})
    if is_error or reset is None:
        raise ScriptError(f"sandbox_reset({task_id}) failed: {text}")
    sandbox_id = reset["sandbox_id"]
    errors: list[str] = []
    finish: dict[str, Any] | None = None
    for c in script.calls:
        args = {"sandbox_id": sandbox_id, **c.args}
        if c.content_from is not None:
            args["content"] = (script_dir / c.content_from).read_text(encoding="utf-8")
        is_error, result, text = await call(c.tool, args)
        if is_error:
            errors.append(f"{c.tool}: {text}")
        elif c.tool == "sandbox_finish":
            finish = result
    if finish is None:
        raise ScriptError(f"script for {task_id} did not finish the sandbox (errors: {errors})")
    return Episode(agent, task_id, sandbox_id, reset["session_id"], finish, errors)


def service_caller(services: Any) -> ToolCaller:
    """A :data:`ToolCaller` that calls :class:`~agent_rl_sandbox.tools.services.Services` in process (no MCP), mapping
    ``ActionError`` to an error result the way the MCP adapter does."""
    from agent_rl_sandbox.server.app import TOOLS
    from agent_rl_sandbox.tools.errors import ActionError

    by_name = {t.name: t for t in TOOLS}

    async def call(tool: str, args: dict[str, Any]):
        spec = by_name[tool]
        try:
            out = services.resolve(spec.impl)(spec.input_model(**args))
        except ActionError as e:
            return True, None, e.agent_text()
        return False, out.model_dump(mode="json"), ""

    return call


def mcp_caller(client: Any) -> ToolCaller:
    """A :data:`ToolCaller` over an ``mcp.Client`` session."""

    async def call(tool: str, args: dict[str, Any]):
        res = await client.call_tool(tool, args)
        text = "".join(getattr(b, "text", "") for b in res.content)
        return bool(res.is_error), res.structured_content, text

    return call

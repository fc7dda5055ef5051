"""Replaying a task's scripted trajectory (``solution/oracle.json``, ``solution/known_bad.json``).

One player serves every caller: the direction test and ``tasks check`` (straight against the
:class:`SandboxService`), the curriculum tests, and the demo (over a real MCP client, through a
caller the ``agents`` package supplies). The server records every action itself; a script never
logs anything.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.schemas.task import ScriptedTrajectory
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.errors import ActionError

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, dict[str, Any] | None, str]]]
"""``await call(tool, args) -> (is_error, structured_result, text)``."""

SCRIPT_TOOLS: dict[str, tuple[str, type[BaseModel]]] = {
    "sandbox_reset": ("reset", io.SandboxResetInput),
    "sandbox_exec": ("exec", io.SandboxExecInput),
    "sandbox_read_file": ("read_file", io.SandboxReadFileInput),
    "sandbox_write_file": ("write_file", io.SandboxWriteFileInput),
    "sandbox_claim": ("claim", io.SandboxClaimInput),
    "sandbox_state": ("state", io.SandboxStateInput),
    "sandbox_finish": ("finish", io.SandboxFinishInput),
}
"""The tools a script may call, as (``SandboxService`` method, input model)."""


@dataclass
class Episode:
    """What a scripted episode produced. ``finish`` is the ``sandbox_finish`` result as JSON."""

    agent: str
    task_id: str
    sandbox_id: str
    session_id: str
    finish: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    """Tool errors the script met (text of each flagged error result)."""


class ScriptError(RuntimeError):
    """The script could not be played (reset failed, a call names a tool scripts may not use, or it
    never reached ``sandbox_finish``)."""


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


def service_caller(sandbox: Any, caller: Caller = OPERATOR) -> ToolCaller:
    """A :data:`ToolCaller` over a ``SandboxService`` in process (no MCP), acting for ``caller`` and
    mapping ``ActionError`` to an error result the way the MCP adapter does. Raises
    :class:`ScriptError` for a tool not in :data:`SCRIPT_TOOLS`."""

    async def call(tool: str, args: dict[str, Any]):
        if tool not in SCRIPT_TOOLS:
            raise ScriptError(f"a script calls {tool!r}; scripts may only use {', '.join(SCRIPT_TOOLS)}")
        method, model = SCRIPT_TOOLS[tool]
        try:
            out = getattr(sandbox, method)(model(**args), caller)
        except ActionError as e:
            return True, None, e.agent_text()
        return False, out.model_dump(mode="json"), ""

    return call


def play_task_script(sandbox: Any, task_id: str, name: str, *, agent: str, caller: Caller = OPERATOR) -> Episode:
    """Play ``solution/<name>.json`` of ``task_id`` straight against ``sandbox`` (synchronous), acting
    for ``caller``.

    Raises ``ActionError`` for an unknown task or a missing/malformed script, :class:`ScriptError`
    when the script cannot be played."""
    script, script_dir = sandbox.task(task_id).scripted(name)
    run = functools.partial(play_script, service_caller(sandbox, caller), task_id, script, script_dir, agent=agent)
    return anyio.run(run)

"""One model-driven sandbox episode, call by call: the seam the policy agent and the TRL training
environment share, so a rollout in training and an evaluation episode record the same trajectory.

Every tool runs the :class:`~agent_rl_sandbox.tools.sandbox.SandboxService` method the MCP tool of
the same name runs (bound through :meth:`~agent_rl_sandbox.services.Services.bind`), so the server
records it as a step with provenance ``server``. What the model is shown as the tool's result is the
observation the store recorded for that step: the same text a training export of this trajectory
holds. A call the model got wrong never raises:

- a malformed block (broken JSON, no name) is recorded with :func:`~agent_rl_sandbox.tools.evals.failed_step`;
- an unknown tool, a tool this episode does not offer, or arguments that fail the tool's input
  model are recorded as a step with outcome ``error`` and an observation that says what to fix;
- a refusal from the service (a forbidden command, an unclaimed path) is the service's own record.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals import ToolCallError, failed_step
from agent_rl_sandbox.tools.sandbox import SandboxService
from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS, tool_declarations

DEFAULT_TOOLS: tuple[str, ...] = tuple(EPISODE_TOOLS)
"""Every episode tool (claim, exec, finish, read_file, write_file), in declaration order."""


@dataclass(frozen=True)
class Observation:
    """What a call gave back: the text the model reads, whether it was an error, and whether the
    episode is now finished (``sandbox_finish`` ran)."""

    content: str
    is_error: bool
    finished: bool = False


class SandboxSession:
    """Plays one sandbox at a time for a model (reused across episodes: a new task variant resets
    the same sandbox when the task is the same, as a pooled training environment does).

    ``services`` is a :class:`~agent_rl_sandbox.services.Services`; ``tools`` the episode tools
    offered (names in :data:`DEFAULT_TOOLS`); ``caller`` who the episode acts for."""

    def __init__(self, services: Any, *, tools: tuple[str, ...] = DEFAULT_TOOLS, caller: Caller = OPERATOR):
        unknown = [t for t in tools if t not in EPISODE_TOOLS]
        if unknown:
            raise ValueError(f"unknown episode tools {', '.join(unknown)}; use names from {', '.join(EPISODE_TOOLS)}")
        self.services = services
        self.tools = tuple(t for t in EPISODE_TOOLS if t in tools)
        self.caller = caller
        self.sandbox_id: str | None = None
        self.task_id: str | None = None
        self.session_id: str | None = None
        self.finish_result: io.SandboxFinishOutput | None = None
        self.calls = 0
        self.errors = 0

    @property
    def declarations(self) -> list[dict[str, Any]]:
        """The offered tools as function declarations (what the chat template renders)."""
        return tool_declarations(self.tools)

    def open(self, task_id: str, *, agent_name: str) -> str:
        """Start an episode of ``task_id`` (reset the held sandbox when it holds the same task, else
        a new one); returns the instruction. Raises ``ActionError`` for an unknown task."""
        reset = self.services.bind(SandboxService.reset)
        sid = self.sandbox_id if self.task_id == task_id else None
        out = reset(io.SandboxResetInput(task_id=task_id, sandbox_id=sid, agent_name=agent_name), self.caller)
        self.sandbox_id, self.task_id, self.session_id = out.sandbox_id, task_id, out.session_id
        self.finish_result = None
        self.calls = self.errors = 0
        return out.instruction

    @property
    def finished(self) -> bool:
        return self.finish_result is not None

    def _require_open(self) -> str:
        if self.session_id is None or self.sandbox_id is None:
            raise RuntimeError("no episode is open; call open(task_id) first")
        return self.session_id

    def _step_count(self) -> int:
        return self.services.store.trajectories.summary(self._require_open()).step_count

    def _last_observation(self) -> str:
        steps = self.services.store.trajectories.get(self._require_open()).steps
        obs = steps[-1].observation if steps else None
        return "".join(r.content or "" for r in obs.results) if obs and obs.results else ""

    def _record_error(self, name: str, arguments: dict[str, Any], text: str, **extra: Any) -> Observation:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        self.services.store.trajectories.append_steps(
            self._require_open(),
            [
                {
                    "source": "agent",
                    "message": "",
                    "tool_calls": [
                        {"tool_call_id": call_id, "function_name": name[:200] or "?", "arguments": arguments}
                    ],
                    "observation": {"results": [{"source_call_id": call_id, "content": text}]},
                    "provenance": "server",
                    "outcome": "error",
                    "extra": {"policy_error": text[:500], **extra},
                }
            ],
        )
        self.errors += 1
        return Observation(text, is_error=True)

    def malformed(self, reason: str, raw: str = "") -> Observation:
        """Record a tool-call block that did not parse; returns the error observation."""
        step = failed_step(ToolCallError(self.calls, reason, raw[:500]))
        self.services.store.trajectories.append_steps(self._require_open(), [step])
        self.calls += 1
        self.errors += 1
        return Observation(step["observation"]["results"][0]["content"], is_error=True)

    def call(self, name: str, arguments: dict[str, Any] | None, *, error: str | None = None) -> Observation:
        """Run tool ``name`` with ``arguments`` in the open episode and return what the model reads.
        ``error`` (arguments that did not parse) records an error instead. Never raises for
        anything the model did; raises ``RuntimeError`` when no episode is open."""
        self._require_open()
        self.calls += 1
        if self.finished:
            return Observation("error: the episode is finished. Next step: stop calling tools.", True, True)
        args = arguments if isinstance(arguments, dict) else {}
        if error is not None or arguments is None:
            return self._record_error(
                name,
                {},
                f"error: bad arguments for {name}: {error or 'not a JSON object'}. "
                "Next step: pass the arguments as one JSON object.",
            )
        tool = EPISODE_TOOLS.get(name)
        if tool is None or name not in self.tools:
            return self._record_error(
                name,
                args,
                f"error: unknown tool {name!r}. Next step: call one of {', '.join(self.tools)}.",
                unknown_tool=True,
            )
        try:
            inp = tool.input_model(sandbox_id=self.sandbox_id, **args)
        except (ValidationError, TypeError) as e:
            where = ""
            msg = str(e)
            if isinstance(e, ValidationError) and e.errors():
                first = e.errors()[0]
                where = ".".join(str(x) for x in first["loc"])
                msg = first["msg"].removeprefix("Value error, ")  # a rule over several arguments names them
            what = f"invalid argument `{where}`" if where else "invalid arguments"
            return self._record_error(name, args, f"error: {what} for {name}: {msg}. Next step: fix it and call again.")
        before = self._step_count()
        method = self.services.bind(getattr(SandboxService, tool.method))
        try:
            out = method(inp, self.caller)
        except ActionError as e:
            if self._step_count() > before:  # the service recorded its refusal itself
                self.errors += 1
                return Observation(self._last_observation() or e.agent_text(), is_error=True)
            return self._record_error(name, args, e.agent_text())
        if name == "sandbox_finish":
            self.finish_result = out
            return Observation(f"finished: reward {out.reward:.3f}, passed {out.passed}", False, True)
        return Observation(self._last_observation(), is_error=False)

    def finish(self, message: str) -> io.SandboxFinishOutput:
        """Finish the episode now (the turn or token budget ran out, or the model stopped without
        calling ``sandbox_finish``) with ``message``; returns the score. Idempotent."""
        if self.finish_result is None:
            text = message.strip() or "(no final message)"
            finish = self.services.bind(SandboxService.finish)
            self.finish_result = finish(
                io.SandboxFinishInput(sandbox_id=self.sandbox_id, message=text[:20_000]), self.caller
            )
        return self.finish_result

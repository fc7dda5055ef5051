"""The sandbox as a TRL ``environment_factory`` environment: agentic GRPO over real sandboxes.

``GRPOTrainer(environment_factory=factory)`` pools instances of the class :func:`environment_class`
makes and calls ``reset(**row)`` before each rollout; every other public method with type hints
and a Google-style docstring becomes a tool the model may call; ``get_reward()`` is called once
per finished rollout. Here:

- ``reset(task_id=..., **rest)`` opens an episode of the row's task variant in this instance's
  sandbox (the same sandbox is reset between episodes of the same task; a new one for another
  task) and returns the instruction, which TRL appends to the row's (empty) user message, so the
  prompt is exactly what the policy agent shows at evaluation;
- the tool methods (``sandbox_exec``, ``sandbox_finish``, ...: the chosen
  :data:`~agent_rl_sandbox.tools.sandbox.EPISODE_TOOLS`) run through
  :class:`~agent_rl_sandbox.agents.policy.SandboxSession`, the same domain methods the MCP tools
  call, and return the observation the store recorded; their declarations (TRL reads them with
  ``get_json_schema``) equal :func:`~agent_rl_sandbox.tools.sandbox.tool_declaration`'s, the ones
  the exported training rows and the policy agent carry;
- ``get_reward()`` finishes the episode if the model did not (``sandbox_finish`` with a note), which
  runs the hidden verifier, and returns the harness's reward.

Every rollout is therefore a trajectory in the store (provenance ``server``), named by the agent
``grpo:<job id>``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from agent_rl_sandbox.agents.policy import SandboxSession
from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS, google_docstring, python_annotation

_ANNOTATIONS: dict[str, Any] = {"str": str, "int": int, "list[str]": list[str]}


class SandboxEnvironment:
    """Base of the generated environment classes (holds the session; no public tool methods)."""

    services: Any = None
    agent_name: str = "grpo"
    tools: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._session = SandboxSession(self.services, tools=self.tools)
        self.episodes = 0

    def reset(self, **row: Any) -> str:
        """Open an episode of ``row["task_id"]`` and return its instruction."""
        task_id = row.get("task_id")
        if not isinstance(task_id, str):
            raise ValueError("each dataset row needs a task_id column naming the task variant")
        if self._session.session_id is not None and not self._session.finished:
            self._session.finish("(episode ended: environment reset before sandbox_finish)")
        self.episodes += 1
        return self._session.open(task_id, agent_name=self.agent_name)

    def get_reward(self) -> float:
        """Finish the episode if the model did not, and return its reward (0..1)."""
        fin = self._session.finish("(episode ended without sandbox_finish)")
        return float(fin.reward)

    @property
    def session_id(self) -> str | None:
        return self._session.session_id

    @property
    def passed(self) -> bool | None:
        fin = self._session.finish_result
        return None if fin is None else fin.passed


def _tool_method(name: str) -> Callable[..., str]:
    tool = EPISODE_TOOLS[name]

    def method(self: SandboxEnvironment, **kwargs: Any) -> str:
        return self._session.call(name, kwargs).content

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for p in tool.params:
        ann = _ANNOTATIONS[python_annotation(p)]
        params.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))
        annotations[p.name] = ann
    annotations["return"] = str
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__name__ = method.__qualname__ = name
    method.__doc__ = google_docstring(name)
    return method


def environment_class(
    services: Any, *, tools: tuple[str, ...] = ("sandbox_exec", "sandbox_finish"), agent_name: str = "grpo"
) -> type[SandboxEnvironment]:
    """A :class:`SandboxEnvironment` subclass whose public methods are exactly ``tools`` (names in
    :data:`~agent_rl_sandbox.tools.sandbox.EPISODE_TOOLS`), acting on ``services`` (a
    :class:`~agent_rl_sandbox.services.Services`) and recording trajectories as ``agent_name``.
    Pass the class itself as ``environment_factory``. Raises ``KeyError`` for an unknown tool."""
    ns: dict[str, Any] = {"services": services, "agent_name": agent_name, "tools": tuple(tools)}
    for name in tools:
        ns[name] = _tool_method(name)
    return type("SandboxEnvironment", (SandboxEnvironment,), ns)

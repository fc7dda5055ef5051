"""The model interface the policy agent plays with: chat messages and tool declarations in, one
assistant turn out.

Backends: :class:`~agent_rl_sandbox.agents.policy.OpenAIChatModel` (an OpenAI-compatible endpoint
such as a vLLM server; plain HTTP, no torch) and ``agent_rl_sandbox.trainers.TransformersPolicy``
(a local transformers model, base or base + PEFT adapter; it lives in ``trainers/``, the only
package that imports torch).

Messages follow the chat-template convention (what ``transformers``' ``apply_chat_template`` and
the training exports use): ``{"role": "system"|"user"|"assistant"|"tool", "content": str}``, an
assistant turn may carry ``tool_calls=[{"type": "function", "function": {"name", "arguments":
dict}}]``, a tool message carries ``name``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model emitted. ``arguments`` is ``None`` when they did not parse as a JSON
    object; ``error`` then says why (the call becomes an error observation, never a crash)."""

    name: str
    arguments: dict[str, Any] | None
    error: str | None = None
    raw: str = ""
    """What the model wrote for this call (cut to 500 characters), for the record."""


@dataclass(frozen=True)
class AssistantTurn:
    """One assistant turn: free text, parsed tool calls, and the completion's size in tokens."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    completion_tokens: int = 0
    malformed: list[str] = field(default_factory=list)
    """Tool-call blocks the parser could not read (each the reason; the raw text stays in ``text``)."""


@runtime_checkable
class PolicyModel(Protocol):
    """Anything that answers a chat with one assistant turn."""

    name: str
    """What the trajectory records as the model (a served model or adapter name, a local folder)."""

    def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_new_tokens: int
    ) -> AssistantTurn:
        """The next assistant turn for ``messages`` with ``tools`` declared (function declarations
        as in :func:`~agent_rl_sandbox.tools.sandbox.tool_declarations`), at most
        ``max_new_tokens`` tokens. Raises ``ModelError`` when the backend cannot answer."""
        ...


class ModelError(RuntimeError):
    """The model backend could not answer (endpoint down, bad response); the message names the
    backend and what to do."""

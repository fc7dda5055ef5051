"""Built-in reward functions for plain GRPO over prompt rows (``spec.hyperparameters.reward``).

A TRL reward function takes ``(prompts, completions, **row_columns)`` and returns one float per
completion; conversational completions arrive as ``[{"role": "assistant", "content", "tool_calls"?}]``
(TRL parses tool calls with the tokenizer's response schema; a malformed call stays text).

- ``tool_call``: 1.0 when the completion makes at least one tool call whose name is one of the
  row's tools (any name when the row lists none), 0.0 otherwise. The reward the tiny model can reach
  first; agentic GRPO (the sandbox's own verifier reward) is the trainer ``agentic_grpo``.
- ``stops``: 1.0 when the completion is non-empty text or a tool call, 0.0 for an empty answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def _message(completion: Any) -> dict[str, Any]:
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return completion[-1]
    return {"role": "assistant", "content": str(completion)}


def _tool_names(tools: Any) -> set[str]:
    tools = json.loads(tools) if isinstance(tools, str) else tools
    names = set()
    for t in tools or []:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return names


def tool_call_reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
    """``tool_call`` (see the module docstring)."""
    tools_col = kwargs.get("tools") or [None] * len(completions)
    out = []
    for completion, tools in zip(completions, tools_col, strict=False):
        names = _tool_names(tools)
        calls = _message(completion).get("tool_calls") or []
        called = [((c.get("function") or {}).get("name")) for c in calls if isinstance(c, dict)]
        out.append(1.0 if called and all(n in names if names else bool(n) for n in called) else 0.0)
    return out


def stops_reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
    """``stops`` (see the module docstring)."""
    out = []
    for completion in completions:
        m = _message(completion)
        out.append(1.0 if (m.get("content") or "").strip() or m.get("tool_calls") else 0.0)
    return out


REWARDS: dict[str, Callable[..., list[float]]] = {"tool_call": tool_call_reward, "stops": stops_reward}
"""Reward functions by the name ``spec.hyperparameters.reward`` uses."""

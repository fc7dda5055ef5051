"""Tool calls in model output (``<tool_call>{json}</tool_call>``, the Qwen/Hermes convention).

:func:`parse_tool_calls` never raises: every block that is not a well-formed call (no name, missing
or non-object arguments, broken JSON, unbalanced tags) becomes a :class:`ToolCallError`, and
:func:`failed_step` turns one into a step to record (outcome ``error``, an error observation the
model can read), so a bad generation is recorded and scored instead of crashing a training loop.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agent_rl_sandbox.tools.evals._actions import MALFORMED_TOOL

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
_TAG = re.compile(r"</?tool_call\s*>")
MAX_RAW = 500
ARG_KEYS = ("arguments", "args", "parameters", "input")


@dataclass(frozen=True)
class ParsedToolCall:
    """A well-formed call: ``name`` and a JSON-object ``arguments``; ``index`` is its block number."""

    index: int
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCallError:
    """A block (or tag) that is not a well-formed call. ``raw`` is the block text, cut to 500 chars."""

    index: int
    reason: str
    raw: str
    name: str | None = None


def _parse_block(index: int, body: str) -> ParsedToolCall | ToolCallError:
    raw = body[:MAX_RAW]
    text = body.strip()
    if not text:
        return ToolCallError(index, "empty tool call", raw)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return ToolCallError(index, f"broken JSON: {e.msg} at line {e.lineno} column {e.colno}", raw)
    except (RecursionError, ValueError) as e:
        return ToolCallError(index, f"broken JSON: {type(e).__name__}", raw)
    if not isinstance(obj, dict):
        return ToolCallError(
            index, f"tool call is a JSON {type(obj).__name__}, expected an object with name and arguments", raw
        )
    if isinstance(obj.get("function"), dict):  # OpenAI style {"function": {"name", "arguments"}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return ToolCallError(
            index,
            "no tool name" if name is None else f"tool name is {type(name).__name__}, not a non-empty string",
            raw,
        )
    key = next((k for k in ARG_KEYS if k in obj), None)
    if key is None:
        return ToolCallError(index, "missing arguments", raw, name)
    args = obj[key]
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            return ToolCallError(index, "arguments is a string that is not valid JSON", raw, name)
    if not isinstance(args, dict):
        return ToolCallError(index, f"arguments is a JSON {type(args).__name__}, expected an object", raw, name)
    return ParsedToolCall(index, name.strip(), args)


def parse_tool_calls(text: Any) -> tuple[list[ParsedToolCall], list[ToolCallError]]:
    """Every ``<tool_call>...</tool_call>`` block of ``text``: ``(calls, errors)`` in block order.

    Unbalanced tags are errors: an opening tag with no closing one (``unclosed``), a second opening
    tag before the first closes (the first is ``unclosed``), a closing tag with no opening one
    (``stray``). Never raises, whatever ``text`` is."""
    if not isinstance(text, str):
        return [], [ToolCallError(0, f"model output is {type(text).__name__}, not text", repr(text)[:MAX_RAW])]
    calls: list[ParsedToolCall] = []
    errors: list[ToolCallError] = []
    open_end: int | None = None
    index = 0
    for m in _TAG.finditer(text):
        if m.group(0).startswith("</"):
            if open_end is None:
                errors.append(ToolCallError(index, f"stray {CLOSE_TAG} at offset {m.start()} with no {OPEN_TAG}", ""))
                index += 1
                continue
            parsed = _parse_block(index, text[open_end : m.start()])
            if isinstance(parsed, ParsedToolCall):
                calls.append(parsed)
            else:
                errors.append(parsed)
            index += 1
            open_end = None
        else:
            if open_end is not None:
                errors.append(
                    ToolCallError(
                        index,
                        f"unclosed {OPEN_TAG}: another {OPEN_TAG} at offset {m.start()}",
                        text[open_end : m.start()][:MAX_RAW],
                    )
                )
                index += 1
            open_end = m.end()
    if open_end is not None:
        errors.append(
            ToolCallError(index, f"unclosed {OPEN_TAG} (no {CLOSE_TAG} before the end)", text[open_end:][:MAX_RAW])
        )
    return calls, errors


def failed_step(error: ToolCallError, *, provenance: str = "server", message: str = "") -> dict[str, Any]:
    """A partial step (for ``TrajectoryRepository.append_steps``) recording a malformed tool call as a
    failed action: tool ``invalid_tool_call``, outcome ``error``, and an observation telling the
    model what was wrong. ``provenance`` is who recorded it (the rollout loop: ``server``)."""
    call_id = f"malformed_{error.index}"
    return {
        "source": "agent",
        "message": message,
        "tool_calls": [{"tool_call_id": call_id, "function_name": MALFORMED_TOOL, "arguments": {}}],
        "observation": {
            "results": [
                {
                    "source_call_id": call_id,
                    "content": f"error: malformed tool call: {error.reason}. Emit {OPEN_TAG}"
                    '{"name": "<tool>", "arguments": {...}}' + CLOSE_TAG,
                }
            ]
        },
        "provenance": provenance,
        "outcome": "error",
        "extra": {"malformed_tool_call": error.reason, "raw": error.raw, "attempted_name": error.name},
    }


def model_output_steps(text: Any, *, provenance: str = "server") -> tuple[list[ParsedToolCall], list[dict[str, Any]]]:
    """``(calls to execute, failed steps to record)`` for one model output (see :func:`failed_step`)."""
    calls, errors = parse_tool_calls(text)
    return calls, [failed_step(e, provenance=provenance) for e in errors]

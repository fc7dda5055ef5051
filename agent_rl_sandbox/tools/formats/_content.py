"""The text of a message content, the one rule every reader uses (ATIF, importers, the dataset validator,
the Claude Code hook).

Message content arrives as a string, or as a list of content parts in one of the shapes the formats use
(OpenAI/ATIF ``{"type": "text", "text": ...}``, Responses API ``input_text``/``output_text``, Anthropic and
MCP content blocks, images, nested ``{"content": ...}`` blocks such as a ``tool_result``)::

    None                         -> ""
    "text"                       -> "text"
    [part, part, ...]            -> the parts' texts joined by "\n", empty ones left out, where a part's text is
        "s" (a bare string)         "s"
        {"text": "s", ...}          "s"
        {"type": "image" | "input_image" | "image_url", ...}   the ``image`` placeholder ("[image]"; None: no text)
        {"content": c, ...}         content_text(c) (nested blocks)
        anything else               nothing
    {"text": "s", ...}           -> "s"
    any other value              -> its canonical JSON (sorted keys, non-ASCII kept)

Pure and total: it never raises, whatever the value (hostile input included: deep nesting stops at
:data:`MAX_DEPTH` levels).
"""

from __future__ import annotations

import json
from typing import Any

IMAGE_TYPES = frozenset({"image", "input_image", "image_url"})
"""Part types that stand for an image."""
IMAGE_PLACEHOLDER = "[image]"
MAX_DEPTH = 32
"""Nested ``content`` blocks deeper than this contribute no text."""


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def content_text(content: Any, *, image: str | None = IMAGE_PLACEHOLDER) -> str:
    """The text of a message content (rules in the module docstring); ``image`` is what an image part
    contributes (``None``: nothing). Never raises."""
    return _text(content, image, 0)


def _text(content: Any, image: str | None, depth: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if depth >= MAX_DEPTH:
            return ""
        parts: list[str] = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                if isinstance(p.get("text"), str):
                    parts.append(p["text"])
                elif isinstance(p.get("type"), str) and p["type"] in IMAGE_TYPES:
                    if image is not None:
                        parts.append(image)
                elif "content" in p:
                    parts.append(_text(p["content"], image, depth + 1))
        return "\n".join(x for x in parts if x)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return _json(content)

"""The well-formed TRL conversational row as ``msgspec`` structs (the typed fast path, :mod:`._fast`).

A row decodes into :class:`Row` only when it has this shape: ``messages``, a non-empty list of
:class:`Message` with a known role, string content, tool calls in the ``{"function": {"name",
"arguments"}}`` form, no unknown key; optional ``tools``. ``arguments`` and ``tools`` are kept raw (read by
``json``, or compared as bytes). These classes live apart from :mod:`._fast_hot` because that module may
be compiled by mypyc, which would make them native classes msgspec cannot decode into.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

Role = Literal["system", "user", "assistant", "tool"]


class Function(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A call's ``function``: its name and its raw ``arguments`` (any JSON value, read later by ``json``)."""

    name: str
    arguments: msgspec.Raw


class Call(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One tool call; ``type`` absent or ``"function"`` (the slow path reports ``"type": null``)."""

    function: Function
    id: str | None = None
    type: Literal["function"] | msgspec.UnsetType = msgspec.UNSET


class Message(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One turn with a known role; ``None`` for an absent (or ``null``) optional field."""

    role: Role
    content: str | None = None
    tool_calls: list[Call] | None = None
    tool_call_id: str | None = None
    name: str | None = None


Messages = Annotated[list[Message], msgspec.Meta(min_length=1)]


class Row(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A row of ``messages`` and, optionally, ``tools`` (raw bytes)."""

    messages: Messages
    tools: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

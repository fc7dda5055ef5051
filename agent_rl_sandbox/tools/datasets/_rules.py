"""Per-row checks for the conversational and text kinds (TRL, MiniMind, OpenAI chat).

Each ``check_<kind>(ctx, row)`` reports findings through ``ctx`` and returns a ``RowInfo`` the
file-level pass uses (lengths, prompt key, preference pair). Checks are hand-written for speed; their
structural part mirrors the kind's JSON Schema exactly (codes in ``STRUCTURAL_CODES``; tested), the
rest is documented with its source in ``docs/dataset-validation.md``.

Rule sources, by dialect:
- TRL: dataset_formats.md (kinds, ``tools`` column, tool calls with ``arguments`` as an object), chat
  templates (roles system/user/assistant/tool, system first).
- MiniMind: README (``tools`` in the system message and ``tool_calls`` as JSON strings; RLAIF final
  placeholder) and ``dataset/lm_dataset.py`` (``turn['content']`` read for every turn; RLAIF roles assigned
  by position, so turns must alternate).
- OpenAI: the dated table in ``_openai_rules.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agent_rl_sandbox.tools.formats import content_text

from . import _openai_rules as OA
from ._params import check_arguments, json_type
from ._reader import DECODER

STRUCTURAL_CODES: frozenset[str] = frozenset(
    {
        "not_an_object",
        "wrong_kind_keys",
        "missing_key",
        "wrong_type",
        "bad_value",
        "unknown_role",
        "unknown_key",
        "empty_list",
        "arguments_wrong_form",
        "tool_calls_wrong_form",
        "tools_wrong_form",
    }
)
"""Codes for errors the kind's JSON Schema also rejects (and only those). Everything else is a rule
beyond JSON Schema."""


@dataclass(frozen=True)
class Dialect:
    """How one family of formats spells conversations (roles, tool-call forms, strictness)."""

    name: str
    roles: frozenset[str]
    tool_calls_in_string: bool
    """MiniMind: ``tool_calls`` is a JSON string holding a list of ``{name, arguments}``."""
    arguments_string_only: bool
    """OpenAI: ``function.arguments`` must be a JSON string (an object is the wrong form)."""
    openai: bool
    """OpenAI message keys, ``id``/``type`` on calls, ``tool_call_id`` on tool messages, weights."""
    content_required: bool
    """MiniMind: every message has a ``content`` key (the loader reads ``turn['content']``)."""
    content_parts: bool
    """Content may be a list of parts (multimodal) rather than a string."""
    system_not_first: str
    """Severity of a system message after the first position."""
    final_assistant: str
    """Severity of an SFT conversation not ending with an assistant turn."""
    drift: str
    """Severity of cross-row type drift (Arrow loads TRL/MiniMind files; OpenAI does not)."""


TRL = Dialect(
    "trl",
    frozenset({"system", "user", "assistant", "tool"}),
    False,
    False,
    False,
    False,
    True,
    "error",
    "error",
    "error",
)
MINIMIND = Dialect(
    "minimind",
    frozenset({"system", "user", "assistant", "tool"}),
    True,
    False,
    False,
    True,
    False,
    "error",
    "error",
    "error",
)
OPENAI = Dialect(
    "openai", OA.ROLES, False, True, True, False, True, "warning", OA.RULES_BY_ID["OA-FINAL"].severity, "warning"
)


class RowInfo:
    """What the file-level pass needs from a row."""

    __slots__ = (
        "style",
        "prompt_chars",
        "total_chars",
        "prompt_pieces",
        "completion_pieces",
        "prompt_key",
        "pref",
        "new_tools",
        "has_tools",
        "has_calls",
        "completion_only",
        "document",
    )

    def __init__(self) -> None:
        self.style: str | None = None
        """``standard`` or ``conversational`` (TRL kinds), else ``None``."""
        self.prompt_chars = 0
        self.total_chars = 0
        self.prompt_pieces: list[str] | None = None
        """Prompt text pieces (only when token counting is on)."""
        self.completion_pieces: list[list[str]] | None = None
        """One list of text pieces per completion side (two for preference rows)."""
        self.prompt_key: str | None = None
        """Normalised prompt (user turns) for leakage and preference conflicts."""
        self.pref: tuple[str, str] | tuple[str, bool] | None = None
        """``(chosen, rejected)`` texts, or ``(completion, label)`` for unpaired rows."""
        self.new_tools = True
        """False when the row's tool declarations equal ones already seen (skip re-walking them)."""
        self.has_tools = False
        self.has_calls = False
        self.completion_only = False
        """True when only the completion is trained (prompt-too-long check applies)."""
        self.document: Any = None
        """The model a document kind's check read the row into (a trajectory suite's ``PortDaddySuite``)."""


class RowCtx:
    """Per-row reporting context handed to the checks."""

    __slots__ = ("v", "line", "kind", "structural", "muted", "need_text", "need_key")

    def __init__(self, v: Any, line: int, kind: str, need_text: bool, need_key: bool):
        self.v = v
        self.line = line
        self.kind = kind
        self.structural = False
        self.muted = False
        self.need_text = need_text
        self.need_key = need_key

    def err(self, path: str, code: str, message: str, severity: str = "error") -> None:
        """Report a finding at ``path`` (ignored while ``muted``)."""
        if self.muted:
            return
        if severity == "error" and code in STRUCTURAL_CODES:
            self.structural = True
        self.v.sink.add(severity, self.line, path, code, message, self.kind)

    def warn(self, path: str, code: str, message: str) -> None:
        """Report a warning at ``path``."""
        self.err(path, code, message, "warning")


# ----------------------------------------------------------------------------------------------------
# small helpers


def normalise(text: str) -> str:
    """Whitespace-collapsed, case-folded text (the key used for prompt leakage and conflicts)."""
    return " ".join(text.split()).casefold()


def _text_of(content: Any) -> str | None:
    """Text of a message content (:func:`~agent_rl_sandbox.tools.formats.content_text`, images counting no
    text); ``None`` when the content is neither a string nor a list of parts (a type error, reported
    elsewhere)."""
    if type(content) is str:
        return content
    if type(content) is list:
        return content_text(content, image=None)
    return None


def _has_non_text_part(content: Any) -> bool:
    return type(content) is list and any(type(p) is dict and p.get("type") not in (None, "text") for p in content)


def parse_json_string(text: str) -> tuple[Any, str | None]:
    """Parse JSON held in a string field; ``(value, None)`` or ``(None, reason)``. Never raises."""
    try:
        return DECODER.decode(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, "nesting too deep"
    except (ValueError, MemoryError, OverflowError) as exc:
        return None, str(exc)[:120] or type(exc).__name__


class ToolSet:
    """Tools declared for one row: name -> parameters schema (``None`` when the tool declares none)."""

    __slots__ = ("names", "chars", "text", "known")

    def __init__(self, names: dict[str, Any], chars: int, text: str, known: bool = True):
        self.names = names
        self.chars = chars
        self.text = text
        self.known = known
        """False when a declaration exists but could not be read (then names are not checked)."""


UNKNOWN_TOOLS = ToolSet({}, 0, "", known=False)


def _decl_name_params(decl: dict) -> tuple[Any, Any, Any]:
    fn = decl.get("function") if "function" in decl else decl
    if type(fn) is not dict:
        return None, None, None
    return fn.get("name"), fn.get("parameters"), fn


def _check_decls_visible(ctx: RowCtx, decls: list, base: str, openai: bool, out: list) -> dict[str, Any]:
    """Structural checks of a visible ``tools`` list (mirrors the schema); returns name -> parameters."""
    names: dict[str, Any] = {}
    for j, decl in enumerate(decls):
        p = f"{base}[{j}]"
        if type(decl) is not dict:
            out.append((p, "wrong_type", f"tool declaration must be an object, got {json_type(decl)}", "error"))
            continue
        if "type" in decl and decl["type"] != "function":
            out.append((f"{p}.type", "bad_value", "tool 'type' must be \"function\"", "error"))
        if openai:
            for key in ("type", "function"):
                if key not in decl:
                    out.append((p, "missing_key", f"tool declaration lacks '{key}' (OpenAI rule OA-TOOLS)", "error"))
            if "function" not in decl:
                continue
        fn_path = f"{p}.function" if "function" in decl else p
        fn = decl.get("function") if "function" in decl else decl
        if type(fn) is not dict:
            out.append((fn_path, "wrong_type", "'function' must be an object", "error"))
            continue
        name = fn.get("name")
        if "name" not in fn:
            out.append((fn_path, "missing_key", "tool declaration lacks 'name'", "error"))
        elif type(name) is not str:
            out.append((f"{fn_path}.name", "wrong_type", "tool name must be a string", "error"))
        if "description" in fn and type(fn["description"]) is not str:
            out.append((f"{fn_path}.description", "wrong_type", "description must be a string", "error"))
        params = fn.get("parameters")
        if "parameters" in fn and type(params) is not dict:
            out.append((f"{fn_path}.parameters", "wrong_type", "parameters must be a JSON Schema object", "error"))
            params = None
        if openai and "strict" in fn and fn["strict"] is not None and type(fn["strict"]) is not bool:
            out.append((f"{fn_path}.strict", "wrong_type", "strict must be a boolean", "error"))
        if type(name) is str:
            if name in names:
                out.append((f"{fn_path}.name", "duplicate_tool_name", f"tool '{name}' is declared twice", "warning"))
            names[name] = params
    return names


def _check_decls_encoded(decls: Any, base: str, out: list) -> dict[str, Any] | None:
    """Checks of declarations decoded from a JSON string (not visible to JSON Schema)."""
    if type(decls) is dict:
        decls = [decls]
    if type(decls) is not list:
        out.append((base, "tools_invalid_json", f"tools string holds {json_type(decls)}, not a list", "error"))
        return None
    names: dict[str, Any] = {}
    for j, decl in enumerate(decls):
        name, params, fn = _decl_name_params(decl) if type(decl) is dict else (None, None, None)
        if type(name) is not str or (params is not None and type(params) is not dict):
            out.append(
                (
                    f"{base}<json>[{j}]",
                    "bad_tool_declaration",
                    "declaration needs a string 'name' and an object 'parameters'",
                    "error",
                )
            )
            continue
        names[name] = params
    return names


class ToolsCache:
    """Remembers checked tool declarations so identical ones (the usual case) cost one equality test."""

    def __init__(self, max_entries: int = 256):
        self._by_key: dict[Any, list[tuple[Any, ToolSet | None, list, list]]] = {}
        self._n = 0
        self.max_entries = max_entries
        self._by_object: dict[tuple[str, str, int], tuple[Any, ToolSet | None, list]] = {}
        """(dialect, base, id(value)) -> (value, toolset, findings) of a value object already matched: the
        parser hands rows the same object for a repeated tools text, which then costs no comparison."""

    def get(self, ctx: RowCtx, value: Any, base: str, dialect: Dialect, encoded: bool) -> tuple[ToolSet | None, bool]:
        """Check ``value`` (a tools list or JSON string) at ``base``; returns ``(toolset, is_new)``."""
        same = self._by_object.get((dialect.name, base, id(value)))
        if same is not None and same[0] is value:
            _replay(ctx, same[2])
            return same[1], False
        if type(value) is list:
            key: Any = (
                dialect.name,
                base,
                len(value),
                _fingerprint(value[0]) if value else None,
                _fingerprint(value[-1]) if value else None,
            )
        else:
            key = (dialect.name, base, value if type(value) is str else repr(value)[:200])
        bucket = self._by_key.get(key)
        if bucket:
            for cached_value, cached_toolset, cached_findings, cached_sensitive in bucket:
                # == treats True as 1: the positions where that could hide a difference are re-checked.
                if (
                    cached_value == value
                    and type(cached_value) is type(value)
                    and all(type(_at(value, path)) is t for path, t in cached_sensitive)
                ):
                    _replay(ctx, cached_findings)
                    if type(value) is list:
                        if len(self._by_object) >= 16:
                            self._by_object.clear()
                        self._by_object[(dialect.name, base, id(value))] = (value, cached_toolset, cached_findings)
                    return cached_toolset, False
        findings: list = []
        toolset = _build_toolset(value, base, dialect, encoded, findings, ctx)
        _replay(ctx, findings)
        if self._n < self.max_entries:
            bucket = self._by_key.setdefault(key, [])
            if len(bucket) < 8:
                sensitive: list = []
                _bool_like_paths(value, (), sensitive, 0)
                bucket.append((value, toolset, findings, sensitive))
                self._n += 1
        return toolset, True

    def peek(self, value: list, base: str, dialect: Dialect) -> ToolSet | None:
        """The tool set ``get`` would return for the list ``value`` as a repeat (``is_new`` False) with no
        finding to replay, else ``None``; changes nothing (the fast path's check that a ``tools`` text is
        already known and clean)."""
        key = (
            dialect.name,
            base,
            len(value),
            _fingerprint(value[0]) if value else None,
            _fingerprint(value[-1]) if value else None,
        )
        for cached_value, cached_toolset, cached_findings, cached_sensitive in self._by_key.get(key) or ():
            if (
                cached_value == value
                and type(cached_value) is type(value)
                and all(type(_at(value, path)) is t for path, t in cached_sensitive)
            ):
                return cached_toolset if not cached_findings else None
        return None


def _bool_like_paths(value: Any, path: tuple, out: list, depth: int) -> None:
    """Paths of values equal to 0 or 1 (booleans included), where ``==`` cannot tell the types apart."""
    t = type(value)
    if t is bool or ((t is int or t is float) and value in (0, 1)):
        out.append((path, t))
    elif depth < 64 and t is dict:
        for k, v in value.items():
            _bool_like_paths(v, path + (k,), out, depth + 1)
    elif depth < 64 and t is list:
        for i, v in enumerate(value):
            _bool_like_paths(v, path + (i,), out, depth + 1)


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def _fingerprint(decl: Any) -> Any:
    if type(decl) is dict:
        fn = decl.get("function", decl)
        if type(fn) is dict:
            name = fn.get("name")
            return name if type(name) is str else None
    return None


def _replay(ctx: RowCtx, findings: list) -> None:
    for path, code, message, severity in findings:
        ctx.err(path, code, message, severity)


def _build_toolset(value: Any, base: str, d: Dialect, encoded: bool, out: list, ctx: RowCtx) -> ToolSet | None:
    if value is None:
        return None
    if type(value) is str:
        if d.openai:
            out.append((base, "wrong_type", "tools must be a list of declarations", "error"))
            return UNKNOWN_TOOLS
        parsed, why = parse_json_string(value)
        if why is not None:
            out.append((base, "tools_invalid_json", f"tools string is not valid JSON: {why}", "error"))
            return UNKNOWN_TOOLS
        names = _check_decls_encoded(parsed, base, out)
        if names is None:
            return UNKNOWN_TOOLS
        return ToolSet(names, len(value), value)
    if type(value) is not list:
        code = "tools_wrong_form" if encoded else "wrong_type"
        out.append((base, code, f"tools must be a list (or a JSON string), got {json_type(value)}", "error"))
        return UNKNOWN_TOOLS
    if encoded:
        out.append((base, "tools_wrong_form", "MiniMind keeps 'tools' as a JSON string (README); got a list", "error"))
        return UNKNOWN_TOOLS
    if d.openai and len(value) > OA.MAX_FUNCTIONS:
        out.append((base, "bad_value", f"{len(value)} tools, over OpenAI's limit of {OA.MAX_FUNCTIONS}", "error"))
    names = _check_decls_visible(ctx, value, base, d.openai, out)
    text = json.dumps(value, ensure_ascii=False)
    return ToolSet(names, len(text), text)


# ----------------------------------------------------------------------------------------------------
# tool calls


def _check_args(ctx: RowCtx, d: Dialect, args: Any, path: str, name: Any, tools: ToolSet | None, encoded: bool) -> int:
    """Check one call's arguments; returns their length in characters."""
    chars = 0
    if type(args) is str:
        chars = len(args)
        parsed, why = parse_json_string(args)
        if why is not None:
            ctx.err(path, "arguments_invalid_json", f"arguments do not parse as JSON: {why}")
            return chars
        if type(parsed) is str:
            again, why2 = parse_json_string(parsed)
            if why2 is None and type(again) is dict:
                ctx.err(path, "arguments_double_encoded", "arguments are JSON-encoded twice; encode the object once")
            else:
                ctx.err(path, "arguments_not_object", "arguments must encode a JSON object, got a string")
            return chars
        if type(parsed) is not dict:
            ctx.err(path, "arguments_not_object", f"arguments must encode a JSON object, got {json_type(parsed)}")
            return chars
        args = parsed
    elif type(args) is dict:
        if d.arguments_string_only and not encoded:
            ctx.err(
                path,
                "arguments_wrong_form",
                "OpenAI requires function.arguments as a JSON string (rule OA-ARGS); got an object",
            )
        chars = len(json.dumps(args, ensure_ascii=False))
    else:
        if encoded:
            ctx.err(path, "bad_tool_call", f"arguments must be an object, got {json_type(args)}")
        else:
            form = "a JSON string" if d.arguments_string_only else "an object (or a JSON string of one)"
            ctx.err(path, "arguments_wrong_form", f"arguments must be {form}, got {json_type(args)}")
        return chars
    if tools is not None and tools.known and type(name) is str:
        params = tools.names.get(name)
        if type(params) is dict:
            problem = check_arguments(args, params)
            if problem:
                ctx.err(path, "arguments_schema", f"arguments do not satisfy {name}'s parameters: {problem}")
    return chars


def _check_name(ctx: RowCtx, name: Any, path: str, tools: ToolSet | None, state: dict) -> None:
    if type(name) is not str:
        return
    if not ctx.muted:
        ctx.v.count_tool(name)
    if tools is None:
        if not state.get("undeclared_reported"):
            state["undeclared_reported"] = True
            ctx.err(path, "tools_not_declared", f"row calls '{name}' but declares no tools")
        return
    if tools.known and name not in tools.names:
        ctx.err(path, "undeclared_tool", f"'{name}' is not among the declared tools")


def _calls_of(
    ctx: RowCtx, d: Dialect, m: dict, p: str, tools: ToolSet | None, state: dict, chars: list[int]
) -> list[tuple[Any, Any, int]] | None:
    """Check a message's tool calls; returns ``[(call_id, name, index)]`` or ``None`` when absent."""
    raw = m.get("tool_calls")
    if raw is None:
        if d.openai and "tool_calls" in m:
            ctx.err(f"{p}.tool_calls", "wrong_type", "tool_calls must be a list, got null")
        return None
    encoded = False
    if d.tool_calls_in_string and type(raw) is list:
        # Wrong form, but still check the calls so the turn is not also reported empty or unanswered.
        ctx.err(
            f"{p}.tool_calls",
            "tool_calls_wrong_form",
            "MiniMind keeps tool_calls as a JSON string (README); got a list",
        )
        calls = raw
        encoded = True
        base = f"{p}.tool_calls"
    elif d.tool_calls_in_string:
        if type(raw) is not str:
            ctx.err(
                f"{p}.tool_calls",
                "tool_calls_wrong_form",
                f"MiniMind keeps tool_calls as a JSON string (README); got {json_type(raw)}",
            )
            return []
        chars[0] += len(raw)
        parsed, why = parse_json_string(raw)
        if why is not None:
            ctx.err(f"{p}.tool_calls", "tool_calls_invalid_json", f"tool_calls string is not valid JSON: {why}")
            return []
        if type(parsed) is dict:
            parsed = [parsed]
        if type(parsed) is not list:
            ctx.err(f"{p}.tool_calls", "tool_calls_invalid_json", f"tool_calls string holds {json_type(parsed)}")
            return []
        calls = parsed
        encoded = True
        base = f"{p}.tool_calls<json>"
    else:
        if type(raw) is not list:
            ctx.err(f"{p}.tool_calls", "wrong_type", f"tool_calls must be a list, got {json_type(raw)}")
            return []
        calls = raw
        base = f"{p}.tool_calls"
    out: list[tuple[Any, Any, int]] = []
    for j, call in enumerate(calls):
        cp = f"{base}[{j}]"
        if type(call) is not dict:
            ctx.err(
                cp, "bad_tool_call" if encoded else "wrong_type", f"tool call must be an object, got {json_type(call)}"
            )
            continue
        call_id = call.get("id")
        if d.openai:
            for key in ("id", "type", "function"):
                if key not in call:
                    ctx.err(cp, "missing_key", f"tool call lacks '{key}' (OpenAI rule OA-CALL-ID)")
            if "id" in call and type(call_id) is not str:
                ctx.err(f"{cp}.id", "wrong_type", "tool call id must be a string")
        if "type" in call and call["type"] != "function":
            ctx.err(f"{cp}.type", "bad_tool_call" if encoded else "bad_value", "tool call 'type' must be \"function\"")
        if "function" in call:
            fn = call["function"]
            fp = f"{cp}.function"
            if type(fn) is not dict:
                ctx.err(fp, "bad_tool_call" if encoded else "wrong_type", "'function' must be an object")
                continue
        elif d.openai:
            continue
        else:
            fn, fp = call, cp
        name = fn.get("name")
        if "name" not in fn:
            ctx.err(fp, "bad_tool_call" if encoded else "missing_key", "tool call lacks 'name'")
        elif type(name) is not str:
            ctx.err(f"{fp}.name", "bad_tool_call" if encoded else "wrong_type", "tool call name must be a string")
        else:
            chars[0] += len(name)
            _check_name(ctx, name, f"{fp}.name", tools, state)
        if "arguments" not in fn:
            ctx.err(fp, "bad_tool_call" if encoded else "missing_key", "tool call lacks 'arguments'")
        else:
            chars[0] += _check_args(ctx, d, fn["arguments"], f"{fp}.arguments", name, tools, encoded)
        out.append((call_id if type(call_id) is str else None, name, j))
    return out


def check_tool_call_tags(ctx: RowCtx, text: str, path: str, tools: ToolSet | None) -> int:
    """Check ``<tool_call>...</tool_call>`` blocks in text-format data (Hermes/Qwen style).

    Tags must be balanced and not nested, and each block must hold a JSON object with a string ``name``
    and ``arguments``. Returns the number of blocks. Source: Qwen2.5/Hermes chat templates, which render
    tool calls as ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``.
    """
    if "tool_call>" not in text:
        return 0
    blocks = 0
    pos = 0
    open_tag, close_tag = "<tool_call>", "</tool_call>"
    while True:
        start = text.find(open_tag, pos)
        close = text.find(close_tag, pos)
        if start < 0:
            if close >= 0:
                ctx.err(path, "tool_call_tags_unbalanced", "'</tool_call>' without a matching '<tool_call>'")
            return blocks
        if 0 <= close < start:
            ctx.err(path, "tool_call_tags_unbalanced", "'</tool_call>' without a matching '<tool_call>'")
            return blocks
        end = text.find(close_tag, start + len(open_tag))
        if end < 0:
            ctx.err(path, "tool_call_tags_unbalanced", "'<tool_call>' is never closed")
            return blocks
        inner = text[start + len(open_tag) : end]
        if open_tag in inner:
            ctx.err(path, "tool_call_tags_unbalanced", "nested '<tool_call>' tags")
            return blocks
        blocks += 1
        value, why = parse_json_string(inner.strip())
        if why is not None:
            ctx.err(path, "tool_call_tag_invalid_json", f"block {blocks} is not valid JSON: {why}")
        elif type(value) is not dict or type(value.get("name")) is not str or "arguments" not in value:
            ctx.err(path, "tool_call_tag_invalid_json", f"block {blocks} needs an object with 'name' and 'arguments'")
        elif tools is not None and tools.known and value["name"] not in tools.names:
            ctx.err(path, "undeclared_tool", f"'{value['name']}' is not among the declared tools")
        pos = end + len(close_tag)


# ----------------------------------------------------------------------------------------------------
# conversations


@dataclass
class Conv:
    """Result of checking one conversation: per-message character counts, text and the last assistant."""

    chars: list[int]
    pieces: list[str] | None
    last_assistant: int
    roles: list[Any]


def _path(seg: tuple[tuple[str, int], ...], i: int) -> str:
    if len(seg) == 1:
        return f"{seg[0][0]}[{i}]"
    for base, offset in reversed(seg):
        if i >= offset:
            return f"{base}[{i - offset}]"
    return f"{seg[0][0]}[{i}]"


def check_conversation(
    ctx: RowCtx,
    msgs: list,
    seg: tuple[tuple[str, int], ...],
    d: Dialect,
    tools: ToolSet | None,
    *,
    mode: str,
    split: int = 0,
    quiet_before: int = 0,
) -> Conv:
    """Check a message list (already known to be a non-empty list).

    ``mode``: ``sft`` (the whole conversation is trained; ends with an assistant turn), ``completion``
    (``msgs[split:]`` is the completion: starts and ends with an assistant turn), ``placeholder``
    (MiniMind RLAIF/agentic: ends with an assistant placeholder that is not checked), ``prompt`` (no
    final-turn rule). Findings on messages before ``quiet_before`` are suppressed (already reported).
    """
    n = len(msgs)
    chars = [0] * n
    pieces: list[str] | None = [""] * n if ctx.need_text else None
    roles: list[Any] = [None] * n
    pending: list[tuple[Any, Any, int, int]] = []  # (id, name, message index, call index)
    state: dict = {}
    prev_role = None
    prev_called = False
    last_assistant = -1
    strict_alternation = ctx.kind == "minimind.rlaif"
    trained_from = split if mode == "completion" else 0
    role_counts = ctx.v.roles
    message_keys = OA.MESSAGE_KEYS
    openai, trl, in_string = d.openai, d.name == "trl", d.tool_calls_in_string
    d_roles = d.roles
    single = f"{seg[0][0]}[" if len(seg) == 1 else None
    ctx.muted = False
    for i, m in enumerate(msgs):
        if quiet_before:
            ctx.muted = i < quiet_before
        p = f"{single}{i}]" if single is not None else _path(seg, i)
        if type(m) is not dict:
            ctx.err(p, "wrong_type", f"message must be an object, got {json_type(m)}")
            prev_role = None
            continue
        role = m.get("role")
        roles[i] = role
        if "role" not in m:
            ctx.err(p, "missing_key", "message lacks 'role'")
        elif type(role) is not str or role not in d_roles:
            ctx.err(f"{p}.role", "unknown_role", f"role {role!r:.40} is not one of {sorted(d_roles)}")
        elif not ctx.muted:
            role_counts[role] = role_counts.get(role, 0) + 1
        content = m.get("content")
        # --- structure (mirrors the kind's schema)
        if openai and not m.keys() <= message_keys:
            for key in m:
                if key not in message_keys:
                    ctx.err(f"{p}.{key}", "unknown_key", f"key '{key}' is not allowed in an OpenAI message (OA-KEYS)")
        if "content" not in m:
            if d.content_required:
                ctx.err(p, "missing_key", "message lacks 'content' (MiniMind's loader reads turn['content'])")
        elif content is not None and type(content) is not str:
            if d.content_parts and type(content) is list:
                for j, part in enumerate(content):
                    if type(part) is not dict:
                        ctx.err(f"{p}.content[{j}]", "wrong_type", "content parts must be objects")
            else:
                ctx.err(f"{p}.content", "wrong_type", f"content must be a string, got {json_type(content)}")
        if openai:
            if "name" in m and type(m["name"]) is not str:
                ctx.err(f"{p}.name", "wrong_type", "name must be a string")
            if "tool_call_id" in m and type(m["tool_call_id"]) is not str:
                ctx.err(f"{p}.tool_call_id", "wrong_type", "tool_call_id must be a string")
            if role == "tool" and "tool_call_id" not in m:
                ctx.err(p, "missing_key", "tool message lacks 'tool_call_id' (OA-CALL-ID)")
            if "weight" in m:
                w = m["weight"]
                if type(w) is bool or type(w) not in (int, float) or w not in OA.WEIGHT_VALUES:
                    ctx.err(f"{p}.weight", "bad_value", f"weight must be 0 or 1, got {w!r:.20} (OA-WEIGHT)")
                elif role != "assistant":
                    ctx.err(f"{p}.weight", "weight_not_assistant", "weight is only allowed on assistant messages")
            if "function_call" in m and type(m["function_call"]) is not dict:
                ctx.err(f"{p}.function_call", "wrong_type", "function_call must be an object")
            if "refusal" in m or "audio" in m:
                for key, allowed in (("refusal", (str,)), ("audio", (dict,))):
                    if key in m and m[key] is not None and type(m[key]) not in allowed:
                        ctx.err(f"{p}.{key}", "wrong_type", f"{key} has the wrong type")
        elif trl and ("name" in m or "tool_call_id" in m):
            for key in ("name", "tool_call_id"):
                if key in m and m[key] is not None and type(m[key]) is not str:
                    ctx.err(f"{p}.{key}", "wrong_type", f"{key} must be a string")
        # --- tool declarations carried by a MiniMind system message
        if in_string and "tools" in m and m["tools"] is not None:
            if i == 0 and role == "system":
                pass  # read by the caller (it declares the row's tools)
            elif type(m["tools"]) is not str:
                ctx.err(f"{p}.tools", "tools_wrong_form", "MiniMind keeps 'tools' as a JSON string")
            else:
                ctx.warn(f"{p}.tools", "tools_misplaced", "tools are read from the first (system) message only")
        # --- text, emptiness and tags
        text = content if type(content) is str else _text_of(content)
        c = [len(text) if text is not None else 0]
        if "tool_calls" in m:
            calls = _calls_of(ctx, d, m, p, tools, state, c)
            if calls and role != "assistant":
                ctx.err(f"{p}.tool_calls", "tool_calls_wrong_role", "only assistant messages may call tools")
                calls = None
        else:
            calls = None
        if openai and "function_call" in m and type(m["function_call"]) is dict and role == "assistant":
            fc = m["function_call"]
            c[0] += _check_args(
                ctx, d, fc.get("arguments", ""), f"{p}.function_call.arguments", fc.get("name"), tools, False
            )
            calls = calls or []
        has_calls = bool(calls)
        if has_calls and not ctx.muted:
            ctx.v.rows_called = True
        empty = (not text or text.isspace()) and not _has_non_text_part(content)
        is_last = i == n - 1
        if role == "assistant":
            last_assistant = i
            if text and "tool_call>" in text:
                check_tool_call_tags(ctx, text, f"{p}.content", tools)
            if mode == "placeholder" and is_last:
                pass
            elif empty and not has_calls:
                if i >= trained_from and mode != "prompt":
                    ctx.err(
                        f"{p}.content",
                        "empty_completion",
                        "assistant turn has no content and no tool calls (nothing to learn)",
                    )
                else:
                    ctx.err(f"{p}.content", "empty_content", "assistant turn in the prompt is empty")
        elif role == "user":
            if empty:
                ctx.err(f"{p}.content", "empty_content", "user message is empty")
        elif role == "system":
            # a MiniMind system message that only carries the tool declarations is not empty: the chat template
            # renders them in the system turn exactly as it would with no system prompt at all
            if empty and "content" in m and not (type(m.get("tools")) is str and m["tools"].strip()):
                ctx.warn(f"{p}.content", "empty_content", "system message is empty")
            if i > 0 and prev_role != "system":
                ctx.err(p, "system_not_first", "a system message may only open the conversation", d.system_not_first)
        elif role == "tool":
            if empty:
                ctx.warn(f"{p}.content", "empty_content", "tool message is empty")
            _answer(ctx, m, p, pending, i)
        # --- alternation
        if role in ("user", "assistant"):
            if pending and (role == "user" or role == "assistant"):
                _unanswered(ctx, seg, pending)
                pending = []
            if role == prev_role and not (role == "assistant" and prev_called):
                sev = "error" if strict_alternation else "warning"
                ctx.err(p, "roles_not_alternating", f"two {role} turns in a row", sev)
            elif strict_alternation and role == "assistant" and prev_role not in ("user", "tool"):
                ctx.err(p, "roles_not_alternating", "assistant turn must follow a user turn", "error")
            elif strict_alternation and role == "user" and prev_role not in (None, "system", "assistant"):
                ctx.err(p, "roles_not_alternating", "user turn must follow an assistant turn", "error")
        if calls:
            for call_id, name, j in calls:
                pending.append((call_id, name, i, j))
        if role in ("user", "assistant", "system"):
            prev_role = role
            prev_called = has_calls
        chars[i] = c[0]
        if pieces is not None and text:
            pieces[i] = text
    ctx.muted = False
    if pending and not (last_assistant == n - 1 and all(mi == n - 1 for _, _, mi, _ in pending)):
        _unanswered(ctx, seg, pending)
    # --- final turn
    if mode == "sft":
        if last_assistant < 0 and d.openai:
            ctx.err(
                _path(seg, 0)[:-3] or "$",
                "no_assistant_message",
                "no assistant message: nothing to train on (OA-ASSISTANT)",
            )
        elif n and roles[-1] != "assistant":
            ctx.err(
                _path(seg, n - 1),
                "missing_final_assistant",
                "conversation must end with an assistant turn (the completion)",
                d.final_assistant,
            )
    elif mode == "completion":
        if n > split:
            if roles[split] != "assistant":
                ctx.err(
                    _path(seg, split), "completion_not_assistant", "the completion must start with an assistant turn"
                )
            if roles[-1] != "assistant":
                ctx.err(_path(seg, n - 1), "missing_final_assistant", "the completion must end with an assistant turn")
    elif mode == "placeholder":
        if roles[-1] != "assistant":
            ctx.err(
                _path(seg, n - 1),
                "missing_placeholder",
                "must end with an assistant placeholder (the loader drops the last message)",
            )
        if "user" not in roles:
            ctx.err(_path(seg, 0), "no_user_message", "no user message to prompt with")
    return Conv(chars, pieces, last_assistant, roles)


def _answer(ctx: RowCtx, m: dict, p: str, pending: list, i: int) -> None:
    """Match a tool message to a pending call (by id, else by name, else in order)."""
    call_id = m.get("tool_call_id")
    name = m.get("name")
    if not pending:
        what = f"id {call_id!r:.40}" if type(call_id) is str else "no pending call"
        ctx.err(p, "tool_response_orphan", f"tool message {i} answers {what}: no tool call was issued for it")
        return
    if type(call_id) is str and any(pid is not None for pid, _, _, _ in pending):
        for k, (pid, _, _, _) in enumerate(pending):
            if pid == call_id:
                del pending[k]
                return
        ctx.err(p, "tool_response_orphan", f"tool message {i} answers id {call_id!r:.40}, which no pending call has")
        return
    if type(name) is str and any(type(pn) is str for _, pn, _, _ in pending):
        for k, (_, pn, _, _) in enumerate(pending):
            if pn == name:
                del pending[k]
                return
        ctx.err(p, "tool_response_orphan", f"tool message {i} answers '{name:.40}', which no pending call has")
        return
    del pending[0]


def _unanswered(ctx: RowCtx, seg: tuple, pending: list) -> None:
    for call_id, name, mi, j in pending:
        what = f"id {call_id!r:.40}" if call_id is not None else f"'{name}'" if type(name) is str else f"#{j}"
        ctx.err(
            f"{_path(seg, mi)}.tool_calls[{j}]",
            "tool_call_unanswered",
            f"tool call {what} in message {mi} gets no tool response before the conversation moves on",
        )


def prompt_key_of(msgs: list, end: int) -> str:
    """Normalised text of the user turns in ``msgs[:end]`` (system prompts and tool output ignored)."""
    parts = []
    for m in msgs[:end]:
        if type(m) is dict and m.get("role") == "user":
            t = _text_of(m.get("content"))
            if t:
                parts.append(normalise(t))
    return "\x1e".join(parts)


def _conv_list(ctx: RowCtx, value: Any, path: str) -> bool:
    """Structural check that ``value`` is a non-empty list (schema: array, minItems 1)."""
    if type(value) is not list:
        ctx.err(path, "wrong_type", f"expected a list of messages, got {json_type(value)}")
        return False
    if not value:
        ctx.err(path, "empty_list", "the message list is empty")
        return False
    return True


def _row_tools(ctx: RowCtx, row: dict, info: RowInfo, d: Dialect) -> ToolSet | None:
    if "tools" not in row or row["tools"] is None:
        return None
    toolset, info.new_tools = ctx.v.tools_cache.get(ctx, row["tools"], "$.tools", d, False)
    if toolset is not None:
        info.has_tools = True
    return toolset


def _fill(
    info: RowInfo, conv: Conv, end: int, tools: ToolSet | None, msgs: list | None, ctx: RowCtx, completion_only: bool
) -> None:
    """Set lengths, text pieces and prompt key from a checked conversation split at ``end``."""
    tool_chars = tools.chars if tools is not None else 0
    info.prompt_chars = sum(conv.chars[:end]) + tool_chars
    info.total_chars = info.prompt_chars + sum(conv.chars[end:])
    info.completion_only = completion_only
    if conv.pieces is not None:
        info.prompt_pieces = ([tools.text] if tools is not None and tools.text else []) + conv.pieces[:end]
        info.completion_pieces = [conv.pieces[end:]]
    if ctx.need_key and msgs is not None:
        info.prompt_key = prompt_key_of(msgs, end)


def _std_text(ctx: RowCtx, value: Any, path: str, tools: ToolSet | None = None) -> str | None:
    if type(value) is not str:
        ctx.err(path, "wrong_type", f"expected a string, got {json_type(value)}")
        return None
    check_tool_call_tags(ctx, value, path, tools)
    return value


# ----------------------------------------------------------------------------------------------------
# TRL kinds


def check_trl_language_modeling(ctx: RowCtx, row: dict) -> RowInfo:
    """TRL language modelling: ``text`` (standard) or ``messages`` (+ ``tools``) (conversational)."""
    info = RowInfo()
    if "messages" in row:
        info.style = "conversational"
        tools = _row_tools(ctx, row, info, TRL)
        msgs = row["messages"]
        if not _conv_list(ctx, msgs, "$.messages"):
            return info
        conv = check_conversation(ctx, msgs, (("$.messages", 0),), TRL, tools, mode="sft")
        end = conv.last_assistant if conv.last_assistant >= 0 else len(msgs)
        _fill(info, conv, end, tools, msgs, ctx, completion_only=True)
        return info
    info.style = "standard"
    text = _std_text(ctx, row["text"], "$.text")
    if text is not None:
        if not text.strip():
            ctx.err("$.text", "empty_text", "text is empty")
        info.total_chars = len(text)
        if ctx.need_text:
            info.prompt_pieces, info.completion_pieces = [], [[text]]
        if ctx.need_key:
            info.prompt_key = normalise(text)
    return info


def check_trl_prompt_only(ctx: RowCtx, row: dict) -> RowInfo:
    """TRL prompt-only: ``prompt`` is a string or a message list."""
    info = RowInfo()
    prompt = row["prompt"]
    tools = _row_tools(ctx, row, info, TRL)
    if type(prompt) is list:
        info.style = "conversational"
        if not _conv_list(ctx, prompt, "$.prompt"):
            return info
        conv = check_conversation(ctx, prompt, (("$.prompt", 0),), TRL, tools, mode="prompt")
        _fill(info, conv, len(prompt), tools, prompt, ctx, completion_only=False)
        info.completion_pieces = [[]] if ctx.need_text else None
        return info
    info.style = "standard"
    text = _std_text(ctx, prompt, "$.prompt", tools)
    if text is not None:
        if not text.strip():
            ctx.err("$.prompt", "empty_content", "prompt is empty")
        info.prompt_chars = info.total_chars = len(text)
        if ctx.need_text:
            info.prompt_pieces, info.completion_pieces = [text], [[]]
        if ctx.need_key:
            info.prompt_key = normalise(text)
    return info


def _pair_styles(ctx: RowCtx, row: dict, keys: tuple[str, ...]) -> str | None:
    """``standard`` / ``conversational`` when every present key has that style, else a structural error."""
    present = [k for k in keys if k in row]
    types = {type(row[k]) for k in present}
    if types == {str}:
        return "standard"
    if types == {list}:
        ok = True
        for k in present:
            ok = _conv_list(ctx, row[k], f"$.{k}") and ok
        return "conversational" if ok else None
    shown = ", ".join(f"{k}: {json_type(row[k])}" for k in present)
    ctx.err("$", "wrong_type", f"{', '.join(present)} must all be strings or all be message lists ({shown})")
    return None


def check_trl_prompt_completion(ctx: RowCtx, row: dict) -> RowInfo:
    """TRL prompt-completion (both strings, or both message lists; the completion is the assistant's turn)."""
    return _prompt_completion(ctx, row, unpaired=False)


def check_trl_unpaired_preference(ctx: RowCtx, row: dict) -> RowInfo:
    """TRL unpaired preference (KTO): prompt-completion plus a boolean ``label``."""
    if type(row["label"]) is not bool:
        ctx.err("$.label", "wrong_type", f"label must be a boolean, got {json_type(row['label'])}")
    return _prompt_completion(ctx, row, unpaired=True)


def _prompt_completion(ctx: RowCtx, row: dict, unpaired: bool) -> RowInfo:
    info = RowInfo()
    tools = _row_tools(ctx, row, info, TRL)
    style = _pair_styles(ctx, row, ("prompt", "completion"))
    info.style = style
    if style is None:
        return info
    prompt, completion = row["prompt"], row["completion"]
    if style == "standard":
        check_tool_call_tags(ctx, prompt, "$.prompt", tools)
        check_tool_call_tags(ctx, completion, "$.completion", tools)
        if not completion.strip():
            ctx.err("$.completion", "empty_completion", "completion is empty")
        info.prompt_chars = len(prompt) + (tools.chars if tools else 0)
        info.total_chars = info.prompt_chars + len(completion)
        info.completion_only = True
        if ctx.need_text:
            info.prompt_pieces = ([tools.text] if tools else []) + [prompt]
            info.completion_pieces = [[completion]]
        if ctx.need_key:
            info.prompt_key = normalise(prompt)
        comp_repr = completion
    else:
        msgs = prompt + completion
        seg = (("$.prompt", 0), ("$.completion", len(prompt)))
        conv = check_conversation(ctx, msgs, seg, TRL, tools, mode="completion", split=len(prompt))
        _fill(info, conv, len(prompt), tools, msgs, ctx, completion_only=True)
        comp_repr = json.dumps(completion, sort_keys=True, ensure_ascii=False) if unpaired else ""
    if unpaired and type(row["label"]) is bool:
        info.pref = (comp_repr, row["label"])
    return info


def _common_prefix(a: list, b: list) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def check_trl_preference(ctx: RowCtx, row: dict) -> RowInfo:
    """TRL preference: explicit ``prompt`` or implicit (shared prefix of ``chosen`` and ``rejected``)."""
    return _preference(ctx, row, TRL)


def check_minimind_dpo(ctx: RowCtx, row: dict) -> RowInfo:
    """MiniMind DPO: ``chosen``/``rejected`` message lists with the same prompt (all but the last turn)."""
    return _preference(ctx, row, MINIMIND)


def _preference(ctx: RowCtx, row: dict, d: Dialect) -> RowInfo:
    info = RowInfo()
    tools = _row_tools(ctx, row, info, d) if d is TRL else None
    if d is TRL:
        style = _pair_styles(ctx, row, ("prompt", "chosen", "rejected"))
    else:
        ok = _conv_list(ctx, row["chosen"], "$.chosen")
        ok = _conv_list(ctx, row["rejected"], "$.rejected") and ok
        style = "conversational" if ok else None
    info.style = style if d is TRL else None
    if style is None:
        return info
    chosen, rejected = row["chosen"], row["rejected"]
    info.completion_only = True
    if style == "standard":
        prompt = row.get("prompt", "")
        for key in ("prompt", "chosen", "rejected"):
            if key in row:
                check_tool_call_tags(ctx, row[key], f"$.{key}", tools)
        for key in ("chosen", "rejected"):
            if not row[key].strip():
                ctx.err(f"$.{key}", "empty_completion", f"{key} is empty")
        if chosen == rejected:
            ctx.err("$.rejected", "chosen_equals_rejected", "chosen and rejected are identical: no preference signal")
        elif "prompt" not in row:
            _check_divergence(ctx, chosen, rejected, "characters")
        info.prompt_chars = len(prompt) + (tools.chars if tools else 0)
        info.total_chars = info.prompt_chars + max(len(chosen), len(rejected))
        if ctx.need_text:
            info.prompt_pieces = ([tools.text] if tools else []) + [prompt]
            info.completion_pieces = [[chosen], [rejected]]
        if ctx.need_key:
            info.prompt_key = normalise(prompt) if prompt else _implicit_text_prompt(chosen, rejected)
        info.pref = (chosen, rejected)
        return info
    if "prompt" in row:
        prompt = row["prompt"]
        k = len(prompt)
        c_msgs, r_msgs = prompt + chosen, prompt + rejected
        c_seg = (("$.prompt", 0), ("$.chosen", k))
        r_seg = (("$.prompt", 0), ("$.rejected", k))
        conv_c = check_conversation(ctx, c_msgs, c_seg, d, tools, mode="completion", split=k)
        conv_r = check_conversation(ctx, r_msgs, r_seg, d, tools, mode="completion", split=k, quiet_before=k)
        split = k
    else:
        k = _common_prefix(chosen, rejected)
        c_msgs, r_msgs = chosen, rejected
        if d is MINIMIND:
            if chosen[:-1] != rejected[:-1]:
                ctx.err(
                    "$.rejected",
                    "prompt_mismatch",
                    "chosen and rejected must share the same prompt (every turn but the last)",
                )
            split = len(chosen) - 1
        else:
            split = k
            if chosen != rejected and k == min(len(chosen), len(rejected)):
                _check_divergence(ctx, chosen, rejected, "turns")
            elif k == 0:
                ctx.err(
                    "$.rejected",
                    "no_shared_prompt",
                    "implicit-prompt rows need chosen and rejected to start with the same prompt turns",
                )
            elif k < len(chosen) and type(chosen[k]) is dict and chosen[k].get("role") != "assistant":
                ctx.warn(
                    f"$.chosen[{k}]",
                    "prompt_mismatch",
                    "chosen and rejected diverge before an assistant turn: the implicit prompt is cut mid-dialogue",
                )
        mode = "completion" if 0 < split < min(len(chosen), len(rejected)) else "sft"
        conv_c = check_conversation(ctx, c_msgs, (("$.chosen", 0),), d, tools, mode=mode, split=split)
        conv_r = check_conversation(ctx, r_msgs, (("$.rejected", 0),), d, tools, mode=mode, split=split, quiet_before=k)
    if chosen == rejected:
        ctx.err("$.rejected", "chosen_equals_rejected", "chosen and rejected are identical: no preference signal")
    tool_chars = tools.chars if tools else 0
    info.prompt_chars = sum(conv_c.chars[:split]) + tool_chars
    info.total_chars = info.prompt_chars + max(sum(conv_c.chars[split:]), sum(conv_r.chars[split:]))
    if conv_c.pieces is not None and conv_r.pieces is not None:
        info.prompt_pieces = ([tools.text] if tools else []) + conv_c.pieces[:split]
        info.completion_pieces = [conv_c.pieces[split:], conv_r.pieces[split:]]
    if ctx.need_key:
        info.prompt_key = prompt_key_of(c_msgs, split)
        info.pref = (
            json.dumps(c_msgs[split:], sort_keys=True, ensure_ascii=False),
            json.dumps(r_msgs[split:], sort_keys=True, ensure_ascii=False),
        )
    return info


def _check_divergence(ctx: RowCtx, chosen: Any, rejected: Any, unit: str) -> None:
    """An implicit-prompt pair where one side is a strict prefix of the other has no divergence point:
    ``trl.data_utils.extract_prompt`` then runs off its loop and cuts the prompt one element short
    (the chosen side becomes its last turn or character, the rejected side that plus the rest), so the
    pair trains on a mangled preference. An error, naming which side is the prefix."""
    if len(chosen) == len(rejected) or chosen[: len(rejected)] != rejected[: len(chosen)]:
        return
    short, long_ = ("chosen", "rejected") if len(chosen) < len(rejected) else ("rejected", "chosen")
    ctx.err(
        f"$.{long_}",
        "no_divergence",
        f"{short} is a strict prefix of {long_} ({min(len(chosen), len(rejected))} of "
        f"{max(len(chosen), len(rejected))} {unit}): there is no point where they diverge, so TRL's implicit "
        "prompt extraction mangles the pair; give both sides their own completion after a shared prompt "
        "(or an explicit 'prompt')",
    )


def _implicit_text_prompt(chosen: str, rejected: str) -> str:
    n = min(len(chosen), len(rejected))
    i = 0
    while i < n and chosen[i] == rejected[i]:
        i += 1
    return normalise(chosen[:i])


def check_trl_stepwise_supervision(ctx: RowCtx, row: dict) -> RowInfo:
    """TRL stepwise supervision: a string prompt, completion steps and one boolean label per step."""
    info = RowInfo()
    info.style = "standard"
    prompt, steps, labels = row["prompt"], row["completions"], row["labels"]
    ok = True
    if type(prompt) is not str:
        ctx.err("$.prompt", "wrong_type", f"prompt must be a string, got {json_type(prompt)}")
        ok = False
    if type(steps) is not list:
        ctx.err("$.completions", "wrong_type", f"completions must be a list of strings, got {json_type(steps)}")
        ok = False
    elif not steps:
        ctx.err("$.completions", "empty_list", "completions is empty")
        ok = False
    else:
        for j, s in enumerate(steps):
            if type(s) is not str:
                ctx.err(f"$.completions[{j}]", "wrong_type", f"step must be a string, got {json_type(s)}")
                ok = False
            elif not s.strip():
                ctx.err(f"$.completions[{j}]", "empty_completion", "step is empty")
    if type(labels) is not list:
        ctx.err("$.labels", "wrong_type", f"labels must be a list of booleans, got {json_type(labels)}")
        ok = False
    else:
        for j, lab in enumerate(labels):
            if type(lab) is not bool:
                ctx.err(f"$.labels[{j}]", "wrong_type", f"label must be a boolean, got {json_type(lab)}")
                ok = False
    if not ok:
        return info
    if len(labels) != len(steps):
        ctx.err("$.labels", "labels_length_mismatch", f"{len(labels)} labels for {len(steps)} completion steps")
    info.prompt_chars = len(prompt)
    info.total_chars = len(prompt) + sum(len(s) for s in steps)
    info.completion_only = True
    if ctx.need_text:
        info.prompt_pieces, info.completion_pieces = [prompt], [list(steps)]
    if ctx.need_key:
        info.prompt_key = normalise(prompt)
    return info


# ----------------------------------------------------------------------------------------------------
# MiniMind kinds


def _minimind_tools(ctx: RowCtx, convs: list, info: RowInfo) -> ToolSet | None:
    """Tools of a MiniMind row: the JSON string in the first (system) message's ``tools`` (README)."""
    first = convs[0] if convs else None
    if type(first) is not dict or first.get("role") != "system" or first.get("tools") is None:
        return None
    toolset, info.new_tools = ctx.v.tools_cache.get(ctx, first["tools"], "$.conversations[0].tools", MINIMIND, True)
    info.has_tools = True
    return toolset


def _minimind_conv(ctx: RowCtx, row: dict, mode: str) -> RowInfo:
    info = RowInfo()
    convs = row["conversations"]
    if not _conv_list(ctx, convs, "$.conversations"):
        return info
    tools = _minimind_tools(ctx, convs, info)
    conv = check_conversation(ctx, convs, (("$.conversations", 0),), MINIMIND, tools, mode=mode)
    if mode == "placeholder":
        end = len(convs) - 1 if conv.roles[-1] == "assistant" else len(convs)
        _fill(info, conv, end, tools, convs, ctx, completion_only=False)
        info.total_chars = info.prompt_chars
        if info.completion_pieces is not None:
            info.completion_pieces = [[]]
    else:
        end = conv.last_assistant if conv.last_assistant >= 0 else len(convs)
        _fill(info, conv, end, tools, convs, ctx, completion_only=True)
    return info


def check_minimind_sft(ctx: RowCtx, row: dict) -> RowInfo:
    """MiniMind SFT: ``conversations`` ending with an assistant turn; tools/tool_calls as JSON strings."""
    return _minimind_conv(ctx, row, "sft")


def check_minimind_rlaif(ctx: RowCtx, row: dict) -> RowInfo:
    """MiniMind RLAIF: alternating user/assistant turns ending in an assistant placeholder."""
    return _minimind_conv(ctx, row, "placeholder")


def check_minimind_agentic(ctx: RowCtx, row: dict) -> RowInfo:
    """MiniMind agentic RL: RLAIF-shaped ``conversations`` plus ``gt``, a non-empty list of targets."""
    gt = row["gt"]
    if type(gt) is not list:
        ctx.err("$.gt", "wrong_type", f"gt must be a list of verification targets, got {json_type(gt)}")
    elif not gt:
        ctx.err("$.gt", "empty_gt", "gt is empty: nothing to verify the rollout against")
    return _minimind_conv(ctx, row, "placeholder")


# ----------------------------------------------------------------------------------------------------
# OpenAI chat


def check_openai_chat(ctx: RowCtx, row: dict) -> RowInfo:
    """OpenAI chat fine-tuning example (rules and sources in ``_openai_rules.RULES``)."""
    info = RowInfo()
    for key in row:
        if key not in OA.TOP_LEVEL_KEYS:
            ctx.warn(f"$.{key}", "unknown_field", f"'{key}' is not part of an OpenAI training example (OA-TOP)")
    if "parallel_tool_calls" in row and type(row["parallel_tool_calls"]) is not bool:
        ctx.err("$.parallel_tool_calls", "wrong_type", "parallel_tool_calls must be a boolean (OA-PARALLEL)")
    if "functions" in row:
        fns = row["functions"]
        if type(fns) is not list:
            ctx.err("$.functions", "wrong_type", "functions must be a list")
        else:
            if len(fns) > OA.MAX_FUNCTIONS:
                ctx.err("$.functions", "bad_value", f"more than {OA.MAX_FUNCTIONS} functions")
            for j, fn in enumerate(fns):
                if type(fn) is not dict:
                    ctx.err(f"$.functions[{j}]", "wrong_type", "function declarations must be objects")
    if "tools" in row and row["tools"] is None:
        ctx.err("$.tools", "wrong_type", "tools must be a list of declarations, got null")
    tools = _row_tools(ctx, row, info, OPENAI)
    if tools is None and type(row.get("functions")) is list:
        names = {f.get("name"): f.get("parameters") for f in row["functions"] if type(f) is dict}
        tools = ToolSet({k: v for k, v in names.items() if type(k) is str}, 0, "")
        info.has_tools = True
    msgs = row["messages"]
    if not _conv_list(ctx, msgs, "$.messages"):
        return info
    conv = check_conversation(ctx, msgs, (("$.messages", 0),), OPENAI, tools, mode="sft")
    trained = [m for m in msgs if type(m) is dict and m.get("role") == "assistant" and m.get("weight", 1) != 0]
    if conv.last_assistant >= 0 and not trained:
        # an example that trains nothing is a wasted (and billed) example: OpenAI's guide has every example
        # teach at least one assistant turn, and a file of such rows trains on no token at all
        ctx.err(
            "$.messages",
            "no_trained_message",
            "every assistant message has weight 0: nothing is trained; set weight 1 on the turn to learn",
        )
    end = conv.last_assistant if conv.last_assistant >= 0 else len(msgs)
    _fill(info, conv, end, tools, msgs, ctx, completion_only=True)
    return info

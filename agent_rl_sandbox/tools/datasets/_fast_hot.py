"""The per-row code of the typed fast path (:mod:`._fast`): decode, the rules on the structs, the effects.

``scripts/compile_scorer.py`` (run by ``make install``) compiles this module with mypyc into
``_fast_hot_c``; :mod:`._fast` uses that build only when it was made from this file's exact text (its
CRC-32), else this module itself, so both run the same code. Everything here is plain Python that
mypyc can type: the structs it decodes into are in :mod:`._fast_types` (kept interpreted).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import msgspec

from ._fast_types import Message, Messages, Row
from ._params import check_arguments
from ._reader import DECODER

_DECODE = msgspec.json.Decoder(Row).decode
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A surrogate escape: msgspec rejects a lone one in the strings it decodes; ``json`` reads it, so raw
values read by ``json`` here (arguments, other columns) with one take the slow path, which reports it.
A known ``tools`` text came from a row with no finding, so holds none."""
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` (the same encoder settings) without building one per call."""
_DECODE_COLUMNS = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
"""A row with more columns than ``messages`` and ``tools``: its columns, each kept raw (key order and
duplicate keys as ``json``: first position, last value)."""
_DECODE_MESSAGES = msgspec.json.Decoder(Messages).decode
KIND: Final = "trl.language_modeling"
_OTHER_KIND_KEYS = frozenset(
    {"steps", "tasks", "conversations", "chosen", "rejected", "prompt", "parallel_tool_calls", "functions"}
)
"""Columns that can make ``candidate_kinds`` say another kind (or OpenAI's): such rows take the slow path
when no kind is given. Otherwise a ``messages`` row with a call whose arguments are an object is
``trl.language_modeling`` alone (``_kinds._trl_signals``), and one without is the file's established kind."""
MAX_COLUMNS: Final = 16
"""Rows with more other columns take the slow path."""
_DecodeError = (msgspec.DecodeError, msgspec.ValidationError)
_UNSET = msgspec.UNSET

MAX_SHAPES: Final = 2048
"""Shape keys remembered (beyond that, rows of new shapes take the slow path: memory stays flat)."""
MAX_TOOLS: Final = 64
"""Distinct ``tools`` texts remembered."""
MAX_TOOLS_BYTES: Final = 1 << 20
MAX_MEMO: Final = 2048
"""Clean call arguments remembered: up to this many recent ones (all forgotten when full) and up to this
many seen twice (kept for the run), so a run's common arguments survive a stream of unique ones."""
_MAX_SIG_ITEMS: Final = 32
_MAX_SIG_DEPTH: Final = 8
_SIG_BUDGET: Final = 256
_MAX_SIG_CALLS: Final = 16
"""Calls a row's shape key holds at most (a row with more takes the slow path): a key stays a few KB."""
MAX_MEMO_ARGS_BYTES: Final = 1024
"""Longer arguments texts are checked every time, not remembered."""

_TAIL: Final = b', "tools": '
_TAIL_N: Final = len(_TAIL)
_HEAD: Final = b'{"tools": '
_HEAD_N: Final = len(_HEAD)
_SEP: Final = b", "
_SEP_N: Final = len(_SEP)
"""How ``json.dumps`` (default separators) spells a last or a first ``tools`` member (``State._spliced``)."""

# bits of a shape key: which optional fields some message (or call) of the row holds
_CONTENT, _CALLS, _CALL_ITEM, _CALL_ID, _CALL_TYPE, _TOOL_CALL_ID, _NAME = (1 << k for k in range(7))

HANDLED: Final = 0
"""``State.row`` handled the row (every effect applied)."""
SLOW: Final = 1
"""The slow path must handle the row."""


class _Bail(Exception):
    """A value the shape key does not cover (too deep or too wide): the slow path takes the row."""


def _sig(value: Any, depth: int, budget: list[int]) -> Any:
    """Hashable type signature of a decoded JSON value (its keys and the types under them), exact
    enough that two values with one signature give the drift walk the same (path, type) pairs.

    ``budget[0]``: units left (one per key, key character and item; ``_SIG_BUDGET`` a call), so a
    remembered shape stays small whatever the row; raises ``_Bail`` when spent, too deep or too wide."""
    t = type(value)
    if t is dict:
        if depth >= _MAX_SIG_DEPTH or len(value) > _MAX_SIG_ITEMS:
            raise _Bail
        budget[0] -= len(value) + sum(map(len, value))
        if budget[0] < 0:
            raise _Bail
        types = tuple(map(type, value.values()))
        if dict in types or list in types:
            return (tuple(value), tuple(_sig(v, depth + 1, budget) for v in value.values()))
        return (tuple(value), types)
    if t is list:
        if depth >= _MAX_SIG_DEPTH or len(value) > _MAX_SIG_ITEMS:
            raise _Bail
        budget[0] -= len(value)
        if budget[0] < 0:
            raise _Bail
        return [_sig(v, depth + 1, budget) for v in value].__repr__()  # a list is not hashable: its repr is
    return t


class State:
    """Per-run state of the typed fast path: the ``tools`` texts and the row shapes proved clean (the
    engine holds it through :class:`._fast.FastPath`).

    ``row(engine, line, raw)`` returns ``HANDLED`` or a tuple ``(tools_bytes, shape_key)`` to learn after
    the slow path has handled the row (``None`` entries: nothing to learn), or ``SLOW``.
    """

    def __init__(self) -> None:
        self.tools: dict[int, list[tuple[bytes, Any, dict]]] = {}
        """Length -> ``[(tools text, ToolSet)]``: texts the tools cache holds with no finding, and their sets."""
        self.n_tools = 0
        self.shapes: set[Any] = set()
        self.memos: dict[str, tuple[dict[bytes, tuple[int, Any]], dict[bytes, tuple[int, Any]]]] = {}
        """Parameters schema (its type-exact ``json`` text) -> ``(kept, recent)``, each arguments text ->
        (characters, signature) of arguments that parse as an object and pass it: ``recent`` holds those
        seen once (``recent_n`` in all, cleared together at ``MAX_MEMO``), ``kept`` those seen again
        (``kept_n`` in all, at most ``MAX_MEMO``)."""
        self.recent_n = 0
        self.kept_n = 0
        self.sigs: dict[Any, Any] = {}
        self.handled = 0

    def learn_tools(self, text: bytes, toolset: Any) -> None:
        """Remember ``text`` (a ``tools`` value's bytes) as clean, with the tool set it declares: each tool
        name -> ``(parameters, kept, recent)``, one memo pair per distinct parameters schema (type-exact ``json`` text:
        arguments that pass one pass its equals, whichever tool set declares them)."""
        if self.n_tools >= MAX_TOOLS:
            return
        names = {}
        for name, params in toolset.names.items():
            canon = json.dumps(params, sort_keys=True)
            memo = self.memos.get(canon)
            if memo is None:
                memo = self.memos[canon] = ({}, {})
            names[name] = (params, memo[0], memo[1])
        self.tools.setdefault(len(text), []).append((text, toolset, names))
        self.n_tools += 1

    def learn_shape(self, shape: Any) -> None:
        """Remember a row shape the slow path walked with no finding (see ``row``)."""
        self.shapes.add(shape)

    def _spliced(self, raw: bytes) -> tuple[list[Message], Any, Any] | None:
        """``(messages, tool set, declared names)`` of a row whose ``tools`` member is the last or the first
        of its object, spelled ``, "tools": K}`` or ``{"tools": K, `` with ``K`` a known clean text,
        decoded without ``K`` (its bytes are most of a row's, and msgspec would scan them even as ``Raw``);
        ``None`` otherwise (the caller decodes the whole row).

        Why the result is the whole row's: the rest, closed (``P}``) or opened (``{R``), decodes as a row
        object, so ``P`` ends (``R`` starts) at the top level of that object, outside any string, with at
        least one member; putting back ``"tools": K`` (a complete JSON value) adds one top-level member
        and nothing else. The rest must hold no ``tools`` key of its own (duplicate keys: the last wins)."""
        n = len(raw)
        for size, entries in self.tools.items():
            at = n - 1 - size
            if at > _TAIL_N and raw.startswith(_TAIL, at - _TAIL_N) and raw.endswith(b"}"):
                head = False  # the row ends with `, "tools": K}`
            elif raw.startswith(_HEAD) and raw.startswith(_SEP, _HEAD_N + size):
                head = True  # the row starts with `{"tools": K, `
                at = _HEAD_N
            else:
                continue
            for entry in entries:
                if raw.startswith(entry[0], at):
                    rest = b"{" + raw[_HEAD_N + size + _SEP_N :] if head else raw[: at - _TAIL_N] + b"}"
                    try:
                        row = _DECODE(rest)
                    except _DecodeError:
                        return None
                    if row.tools is not _UNSET:
                        return None
                    return row.messages, entry[1], entry[2]
        return None

    def row(self, engine: Any, line: int, raw: bytes) -> Any:
        """Handle one row's bytes (a JSONL line, no line ending) if it is provably clean; see the class
        docstring for the result."""
        columns: list | None = None
        spliced = self._spliced(raw) if self.tools else None
        if spliced is not None:
            msgs, toolset, declared = spliced
            return self._rest(engine, line, raw, msgs, toolset, declared, None)
        try:
            row = _DECODE(raw)
            msgs = row.messages
            tools_raw = row.tools
        except msgspec.ValidationError:  # well-formed JSON of another shape: other columns, say
            try:
                cols = _DECODE_COLUMNS(raw)
                msgs_raw = cols.get("messages")
                if msgs_raw is None or len(cols) > MAX_COLUMNS:
                    return SLOW
                msgs = _DECODE_MESSAGES(msgs_raw)
            except _DecodeError:
                return SLOW
            tools_raw = cols.get("tools", _UNSET)
            if engine.kind is None and not _OTHER_KIND_KEYS.isdisjoint(cols):
                return SLOW  # kind detection might not say trl.language_modeling
            columns = []
            decode = DECODER.decode
            for column, value in cols.items():
                if column != "messages" and column != "tools":
                    text = bytes(value)
                    if b"\\" in text and _SURROGATE_ESCAPE.search(text):
                        return SLOW
                    try:  # the column's value read by json itself (its NaN, float and depth rules)
                        columns.append((column, decode(text.decode("utf-8"))))
                    except Exception:
                        return SLOW
        except msgspec.DecodeError:
            return SLOW
        toolset = None
        declared = None
        if tools_raw is not _UNSET:
            key = bytes(tools_raw)
            for text, known, names in self.tools.get(len(key), ()):  # compared, not hashed (a few KB each)
                if text == key:
                    toolset, declared = known, names
                    break
            else:
                if key == b"null":
                    pass
                elif self.n_tools < MAX_TOOLS and len(key) <= MAX_TOOLS_BYTES:
                    return (key, None)
                else:
                    return SLOW
        return self._rest(engine, line, raw, msgs, toolset, declared, columns)

    def _rest(
        self, engine: Any, line: int, raw: bytes, msgs: list[Message], toolset: Any, declared: Any, columns: Any
    ) -> Any:
        """``row`` once the row is decoded: its conversation rules, its shape, then its effects."""
        try:
            result = _conversation(msgs, declared, self)
        except _Bail:
            return SLOW
        if result is None:
            return SLOW
        shape, chars, roles, names, called = result
        if not called and engine.kind is None and engine.established != KIND:
            return SLOW  # no call with object arguments: the row alone is ambiguous (TRL or OpenAI)
        if shape not in self.shapes:
            return (None, shape) if len(self.shapes) < MAX_SHAPES else SLOW
        # --- the row is clean: the effects the slow path has on a clean row, in its order
        engine.rows += 1
        engine._tools_repeat = False
        engine.parsed += 1
        kind = KIND
        engine.kinds[kind] += 1
        counts = engine.roles
        for role in roles:
            counts[role] = counts.get(role, 0) + 1
        tools_count = engine.tools
        for name in names:  # count_tool; a decoded name holds no lone surrogate, so safe_text keeps it
            if name in tools_count:
                tools_count[name] += 1
            else:
                engine.count_tool(name)
        engine.rows_called = called
        engine.document = None
        if toolset is not None:
            engine.rows_with_tools += 1
            chars += toolset.chars
        if called:
            engine.rows_with_calls += 1
        engine.styles["conversational"] += 1
        first = engine.dups.add((hash(raw) & 0xFFFFFFFFFFFFFFFF) or 1, line)  # digest64, inlined
        if first:
            engine.duplicates += 1
            engine.sink.add("warning", line, "$", "duplicate_row", f"same as line {first}", kind)
        if columns:  # the other columns: the slow path's own drift walk (messages and tools add nothing)
            out: list = []
            walk = engine.drift.walk_key
            for key, value in columns:
                if value is not None:
                    walk(key, value, line, out)
            engine.report_drift(line, kind, "error", out)
        engine.hist_chars.add(chars)
        self.handled += 1
        return HANDLED


def _arguments(args_raw: bytes, params: Any, sigs_seen: dict) -> tuple[int, Any] | None:
    """``(characters, signature)`` of a call's raw ``arguments`` that parse (``json``) as an object
    satisfying ``params``; ``None`` when the slow path must judge them (a finding, a string, an error)."""
    if b"\\" in args_raw and _SURROGATE_ESCAPE.search(args_raw):
        return None  # json would read a lone surrogate here (msgspec rejects them in typed strings)
    try:
        args = DECODER.decode(args_raw.decode("utf-8"))
    except Exception:  # any json error (or depth): the slow path reports it exactly
        return None
    if type(args) is not dict:  # a string (parsed again) or a wrong form
        return None
    if type(params) is dict and check_arguments(args, params):
        return None
    try:
        sig = _sig(args, 0, [_SIG_BUDGET])
    except _Bail:
        return None
    if len(sigs_seen) < MAX_SHAPES:
        sig = sigs_seen.setdefault(sig, sig)  # one object per signature: memo entries share it
    return len(_ENCODE(args)), sig


def _conversation(msgs: list[Message], tool_names: dict | None, fast: State) -> tuple | None:
    """The rules of ``check_conversation`` (TRL, ``sft``) on clean structs: ``None`` when any would report,
    else ``(shape_key, chars, roles, tool_names, called)``."""
    n = len(msgs)
    mask = 0
    sigs: list = []
    chars = 0
    roles: list[str] = []
    names: list[str] = []
    pending: list[tuple[str | None, str, int]] = []
    prev_role: str | None = None
    prev_called = False
    called = False
    for i, m in enumerate(msgs):
        role = m.role
        roles.append(role)
        text = m.content
        if text is not None:
            mask |= _CONTENT
            chars += len(text)
            empty = not text or text.isspace()
        else:
            empty = True
        if m.tool_call_id is not None:
            mask |= _TOOL_CALL_ID
        if m.name is not None:
            mask |= _NAME
        calls = m.tool_calls
        has_calls = False
        new: list[tuple[str | None, str, int]] = []
        if calls is not None:
            mask |= _CALLS
            if calls:
                if role != "assistant" or tool_names is None:  # tool_calls_wrong_role / tools_not_declared
                    return None
                mask |= _CALL_ITEM
                for call in calls:
                    if call.id is not None:
                        mask |= _CALL_ID
                    if call.type is not _UNSET:
                        mask |= _CALL_TYPE
                    fn = call.function
                    name = fn.name
                    declared = tool_names.get(name)
                    if declared is None:  # undeclared_tool
                        return None
                    names.append(name)
                    args_raw = bytes(fn.arguments)
                    params, kept, recent = declared
                    got = kept.get(args_raw)
                    if got is None:
                        got = recent.get(args_raw)
                        if got is not None:
                            if fast.kept_n < MAX_MEMO:  # seen again: kept for the rest of the run
                                kept[args_raw] = got
                                fast.kept_n += 1
                        else:
                            got = _arguments(args_raw, params, fast.sigs)
                            if got is None:
                                return None
                            if len(args_raw) <= MAX_MEMO_ARGS_BYTES:
                                if fast.recent_n >= MAX_MEMO:
                                    for pair in fast.memos.values():
                                        pair[1].clear()
                                    fast.recent_n = 0
                                recent[args_raw] = got
                                fast.recent_n += 1
                    chars += len(name) + got[0]
                    sigs.append(got[1])
                    new.append((call.id, name, i))
                has_calls = True
                called = True
        if role == "assistant":
            if empty and not has_calls:
                return None  # empty_completion
            if text and "tool_call>" in text:
                return None  # tags: checked by the slow path
        elif role == "user":
            if empty:
                return None
        elif role == "system":
            if empty or (i > 0 and prev_role != "system"):
                return None
        else:  # tool
            if empty or not _answer(m, pending):
                return None
            continue  # a tool turn neither alternates nor becomes prev_role
        if role != "system":
            if pending:  # the turn moves on with calls unanswered (tool_call_unanswered)
                return None
            if role == prev_role and not (role == "assistant" and prev_called):
                return None  # roles_not_alternating
            pending = new
        prev_role = role
        prev_called = has_calls
    if pending and not all(p[2] == n - 1 for p in pending):
        return None
    if len(sigs) > _MAX_SIG_CALLS:
        return None
    if msgs[-1].role != "assistant":
        return None  # missing_final_assistant
    return (mask, tuple(sigs)), chars, roles, names, called


def _answer(m: Message, pending: list) -> bool:
    """``_rules._answer`` without its findings: match the tool turn to a pending call; False for an orphan."""
    if not pending:
        return False
    call_id = m.tool_call_id
    if call_id is not None and any(pid is not None for pid, _, _ in pending):
        for k, (pid, _, _) in enumerate(pending):
            if pid == call_id:
                del pending[k]
                return True
        return False
    name = m.name
    if name is not None:  # every pending name is a string here
        for k, (_, pn, _) in enumerate(pending):
            if pn == name:
                del pending[k]
                return True
        return False
    del pending[0]
    return True

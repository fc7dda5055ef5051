"""Entry points: ``validate_file``, ``validate_files``, ``validate_rows``.

One pass over the file, one row at a time: read (``_reader``), detect the kind per row (``_kinds``),
check the row (``_rules``/``_documents``), then the dataset-level checks that span rows (duplicates,
conflicting preferences, type drift, lengths, leakage) with bounded state (``_dataset``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from agent_rl_sandbox.tools.errors import ActionError

from . import _openai_rules as OA
from ._dataset import DigestTable, Drift, Histogram, Sink, digest64, nested_deeper_than, safe_text
from ._documents import check_atif, check_trajectory_suite
from ._fast import HANDLED, SLOW, FastPath
from ._kinds import KINDS, candidate_kinds, canonical_kind, has_required_keys, kinds_help
from ._manifest import manifest_kind
from ._reader import (
    DECODER,
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    ReadProblem,
    is_no_newline,
    iter_document,
    iter_jsonl,
    parse_json_text,
    sniff_document,
)
from ._report import Summary, ValidationReport
from ._rules import (
    MINIMIND,
    OPENAI,
    TRL,
    RowCtx,
    RowInfo,
    ToolsCache,
    check_minimind_agentic,
    check_minimind_dpo,
    check_minimind_rlaif,
    check_minimind_sft,
    check_openai_chat,
    check_trl_language_modeling,
    check_trl_preference,
    check_trl_prompt_completion,
    check_trl_prompt_only,
    check_trl_stepwise_supervision,
    check_trl_unpaired_preference,
)

Progress = Callable[[int, int], None]
Opener = Callable[[Path], BinaryIO]
"""Opens a dataset file for binary reading; raises ``OSError`` when it cannot (or must not)."""
"""``progress(done, total)``: bytes read and file size for files; rows done and row count for inline rows."""

_CHECKS: dict[str, Callable[[RowCtx, dict], RowInfo]] = {
    "trl.language_modeling": check_trl_language_modeling,
    "trl.prompt_only": check_trl_prompt_only,
    "trl.prompt_completion": check_trl_prompt_completion,
    "trl.preference": check_trl_preference,
    "trl.unpaired_preference": check_trl_unpaired_preference,
    "trl.stepwise_supervision": check_trl_stepwise_supervision,
    "minimind.sft": check_minimind_sft,
    "minimind.dpo": check_minimind_dpo,
    "minimind.rlaif": check_minimind_rlaif,
    "minimind.agentic": check_minimind_agentic,
    "openai.chat": check_openai_chat,
    "atif": check_atif,
    "trajectory_suite": check_trajectory_suite,
}
assert set(_CHECKS) == set(KINDS)

_DRIFT_SEVERITY = {
    "openai.chat": OPENAI.drift,
    **{k: TRL.drift for k in KINDS if k.startswith("trl.")},
    **{k: MINIMIND.drift for k in KINDS if k.startswith("minimind.")},
}
"""Cross-row type drift matters where Arrow loads the file (TRL, MiniMind); documents are not checked."""

_AMBIGUOUS_WARN = (
    frozenset({"trl.preference", "minimind.dpo"}),
    frozenset({"trl.language_modeling", "openai.chat"}),
)
_PREFERENCE_KINDS = frozenset({"trl.preference", "trl.unpaired_preference", "minimind.dpo"})
MAX_DEPTH = 64
"""Rows nested deeper than this are reported as ``too_deep`` (templates and loaders recurse)."""
PRESCAN_ROWS = 256
"""Rows read ahead to settle ambiguous kinds (a ``messages`` row is TRL or OpenAI) before validating."""
CHARS_PER_TOKEN = 4
"""Token estimate without a tokenizer: 4 ASCII characters per token, each non-ASCII character one token."""
_MAX_TOOL_NAMES = 200
_FAST_KIND = "trl.language_modeling"
FAST_PATH = True
"""Use the typed fast path (``_fast``) where it applies; the tests turn it off to compare the two paths."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


_MAX_TOOLS_TEXTS = 8
"""Distinct repeated ``tools`` texts remembered per run (see ``_Engine._parse``)."""
_MAX_TOOLS_TEXT_CHARS = 1 << 20
_TOOLS_KEY = '"tools"'


def _tools_value_at(text: str) -> int:
    """Index where the value of the row's top-level ``"tools"`` key starts, or -1 unless provable.

    Provable: ``"tools"`` occurs exactly once in the text and no escape could spell t, o, l or s
    (``\\u006x``/``\\u007x``), so no other key decodes to ``tools``; a row that has a ``tools`` key then
    has it there (callers check the parsed row has it). Inside a string ``"tools"`` cannot occur unescaped.
    """
    pos = text.find(_TOOLS_KEY)
    if pos < 0 or text.find(_TOOLS_KEY, pos + 7) >= 0 or "\\u006" in text or "\\u007" in text:
        return -1
    return _value_start(text, pos + 7)


def _value_start(text: str, j: int) -> int:
    """Index of the value after the key ending at ``j`` (whitespace, a colon, whitespace), or -1."""
    n = len(text)
    while j < n and text[j] in " \t\n\r":
        j += 1
    if j >= n or text[j] != ":":
        return -1
    j += 1
    while j < n and text[j] in " \t\n\r":
        j += 1
    return j


def _has_tool_calls(messages: Any) -> bool:
    """True when a message list carries tool calls (where TRL and OpenAI rules differ)."""
    return type(messages) is list and any(type(m) is dict and m.get("tool_calls") for m in messages)


def estimate_tokens(text: str) -> int:
    """Documented character estimate of a token count (see ``CHARS_PER_TOKEN``); an upper-ish bound for CJK."""
    if text.isascii():
        return -(-len(text) // CHARS_PER_TOKEN)
    ascii_n = len(text.encode("ascii", "ignore"))
    return -(-ascii_n // CHARS_PER_TOKEN) + (len(text) - ascii_n)


def _load_tokenizer(path: str) -> Any:
    """Load a ``tokenizers`` tokenizer from ``tokenizer.json`` (or a folder holding one); never torch."""
    try:
        from tokenizers import Tokenizer  # lazy: only when a tokenizer path is given
    except ImportError as exc:  # pragma: no cover - tokenizers comes with the train extra
        raise ActionError(
            "counting tokens needs the 'tokenizers' package",
            "pip install tokenizers, or drop tokenizer_path to use the character estimate",
        ) from exc
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer.json"
    try:
        return Tokenizer.from_file(str(p))
    except Exception as exc:  # tokenizers raises plain Exception subclasses
        raise ActionError(
            f"could not load a tokenizer from {p}: {exc}",
            "pass the path of a tokenizer.json (or of a folder holding one)",
        ) from exc


class _Engine:
    """State of one validation run (one file or one list of rows)."""

    def __init__(
        self,
        *,
        kind: str | None,
        max_errors: int,
        tokenizer: Any,
        max_length: int | None,
        report_path: Path | None,
        collect_prompts: bool = False,
        leak: tuple[DigestTable, str] | None = None,
    ):
        self.kind = kind
        self.sink = Sink(max_errors, report_path)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.need_text = tokenizer is not None or max_length is not None
        self.collect = DigestTable() if collect_prompts else None
        self.leak = leak
        self.tools_cache = ToolsCache()
        self.drift = Drift(max_depth=MAX_DEPTH)
        self.document: Any = None  # the last row's document model (RowInfo.document)
        self.dups = DigestTable()
        self.prefs = DigestTable()
        self.hist_chars = Histogram()
        self.hist_tokens = Histogram() if tokenizer is not None else None
        self.kinds: dict[str, int] = {}
        self.first_line: dict[str, int] = {}
        self.styles: dict[str, int] = {}
        self.style_first: dict[tuple[str, str], int] = {}
        self.established: str | None = None
        self.ambiguous_warned = False
        self.roles: dict[str, int] = {}
        self.tools: dict[str, int] = {}
        self.rows = 0
        self.parsed = 0
        self.blank = 0
        self.first_blank = 0
        self.bytes_read = 0
        self.bom = False
        self.rows_with_tools = 0
        self.rows_with_calls = 0
        self.rows_called = False
        self.overlong = 0
        self.prompt_too_long = 0
        self.duplicates = 0
        self.leaked = 0
        self.openai_rows = 0
        self.tools_texts: dict[str, Any] = {}
        """Text of a repeated top-level ``tools`` value -> its parsed value (see ``_parse``)."""
        self._tools_repeat = False
        self.fast: FastPath | None = (
            FastPath()
            if FAST_PATH and kind in (_FAST_KIND, None) and not self.need_text and not collect_prompts
            else None
        )
        """The typed fast path (``_fast``) for clean ``trl.language_modeling`` rows; ``None`` where it
        does not apply (another kind, token counting, prompt keys for leakage or eval prompts)."""
        self._fast_ready = False

    # --- counters used by the checks
    def count_role(self, role: str) -> None:
        self.roles[role] = self.roles.get(role, 0) + 1

    def count_tool(self, name: str) -> None:
        if not name.isascii():
            name = safe_text(name)
        tools = self.tools
        if name in tools:
            tools[name] += 1
        elif len(tools) < _MAX_TOOL_NAMES:
            tools[name] = 1
        else:
            tools["<other>"] = tools.get("<other>", 0) + 1

    # --- input
    def problem(self, p: ReadProblem, line: int) -> None:
        """A line that could not be parsed (counted as a row)."""
        self.rows += 1
        self.kinds["unknown"] = self.kinds.get("unknown", 0) + 1
        self.sink.add("error", line, "$", p.code, p.message, None)

    def blank_line(self, line: int) -> None:
        self.blank += 1
        if not self.first_blank:
            self.first_blank = line

    def prescan(self, rows: Iterable[Any]) -> None:
        """Settle the file's kind from its first rows, so ambiguous rows take the file's decisive kind."""
        if self.kind is not None:
            return
        for row in rows:
            cands = candidate_kinds(row)
            if len(cands) == 1:
                self.established = cands[0]
                return

    def _parse(self, text: str, last_line: bool) -> tuple[Any, ReadProblem | None, bool]:
        """Parse one row's text: ``(value, problem, spliced)``, exactly as ``parse_json_text`` would.

        Rows usually repeat the same ``tools`` declarations, which are most of their bytes. When the row's
        single top-level ``tools`` value is, character for character, a text already parsed in this run
        (``tools_texts``), the row is parsed with that value replaced by ``0`` and the earlier parsed
        value put back at the same key (same key order). An array is self-delimiting and JSON values are
        context-free, so the result equals the full parse; anything else (the text fails to parse, or
        ``"tools"`` is not provably the one top-level key) takes the full parse, which also gives the
        error message.
        """
        if self.tools_texts:
            pos = text.find(_TOOLS_KEY)
            j = _value_start(text, pos + 7) if pos >= 0 else -1
            if j >= 0:
                for known, value in self.tools_texts.items():
                    if text.startswith(known, j):
                        # A remembered text holds no "tools" and no \u006x/\u007x escape (_tools_value_at
                        # checked its row): check the rest of this row's text the same way.
                        end = j + len(known)
                        if (
                            text.find(_TOOLS_KEY, end) < 0
                            and text.find("\\u006", 0, pos) < 0
                            and text.find("\\u007", 0, pos) < 0
                            and text.find("\\u006", end) < 0
                            and text.find("\\u007", end) < 0
                        ):
                            row, problem = parse_json_text(text[:j] + "0" + text[end:])
                            if problem is None and type(row) is dict and row.get("tools") == 0:
                                row["tools"] = value
                                return row, None, True
                        break
        value, problem = parse_json_text(text, last_line=last_line)
        return value, problem, False

    def _learn_tools_text(self, text: str, row: dict) -> None:
        """Remember the text of ``row``'s top-level ``tools`` (a list seen before in this run)."""
        if len(self.tools_texts) >= _MAX_TOOLS_TEXTS:
            return
        j = _tools_value_at(text)
        if j < 0:
            return
        try:
            value, end = DECODER.raw_decode(text, j)
        except (ValueError, RecursionError):
            return
        if type(value) is not list or value != row["tools"] or end - j > _MAX_TOOLS_TEXT_CHARS:
            return
        if nested_deeper_than(value, MAX_DEPTH):
            return
        self.tools_texts[text[j:end]] = row["tools"]  # the object the tools cache has seen (an identity hit)

    def _fast_on(self) -> bool:
        """True once the fast path may take rows: the kind's first row and its style's first row were
        seen (they record first lines), and no prompt key is needed (no eval file). Never turns off."""
        if self.leak is not None or self.fast is None or self.kind not in (_FAST_KIND, None):
            self.fast = None
            return False
        kind = _FAST_KIND
        if kind in self.first_line and kind in self.kinds and (kind, "conversational") in self.style_first:
            self._fast_ready = True
        return self._fast_ready

    def text_row(self, line: int, text: str, raw: bytes | None, last_line: bool = False, inline: bool = False) -> None:
        """Parse and validate one JSON text found at ``line`` (``inline``: it came from ``validate_rows``)."""
        learn: Any = None
        if self.fast is not None and raw is not None and not inline and (self._fast_ready or self._fast_on()):
            learn = self.fast.row(self, line, raw)
            if learn is HANDLED:
                return
        self._text_row(line, text, raw, last_line, inline, learn)

    def plain_line(self, line: int, raw: bytes) -> bool:
        """``text_row`` for a plain JSONL line (the reader's ``lane``: ``iter_jsonl`` passes the line's bytes,
        not yet decoded); False, handling nothing, when the bytes are not UTF-8 (the reader reports it).
        The text is decoded only when the fast path does not take the row."""
        if raw.isascii():
            text = None
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return False
        learn: Any = None
        if self.fast is not None and (self._fast_ready or self._fast_on()):
            learn = self.fast.row(self, line, raw)
            if learn is HANDLED:
                return True
        self._text_row(line, raw.decode("ascii") if text is None else text, raw, False, False, learn)
        return True

    def _text_row(self, line: int, text: str, raw: bytes | None, last_line: bool, inline: bool, learn: Any) -> None:
        """``text_row`` after the fast path declined the row (``learn``: its ``SLOW``, what to learn, or None)."""
        if learn is SLOW:
            learn = None
        elif learn is not None:
            before = self.sink.error_count + self.sink.warning_count
        value, problem, spliced = self._parse(text, last_line)
        if problem is not None:
            self.problem(problem, line)
            return
        if inline or (raw is not None and b"\\u" in raw and _SURROGATE_ESCAPE.search(raw)):
            try:
                (text if inline else json.dumps(value, ensure_ascii=False)).encode("utf-8")
            except UnicodeEncodeError:
                self.sink.add(
                    "error",
                    line,
                    "$",
                    "lone_surrogate",
                    "a string holds an unpaired UTF-16 surrogate (\\ud800-\\udfff escape): tokenizers "
                    "and Arrow reject it",
                    None,
                )
            except RecursionError:
                pass
        self.row(line, value, raw)
        if self._tools_repeat and not spliced:
            self._learn_tools_text(text, value)
        if learn is not None and self.fast is not None and before == self.sink.error_count + self.sink.warning_count:
            self._fast_learn(learn, value)

    def _fast_learn(self, learn: tuple, value: Any) -> None:
        """After the slow path handled a clean row the fast path could not prove: remember its ``tools``
        text (with the tool set the tools cache holds for it, when it holds one with no finding) or its
        shape (the drift walk has now recorded every (path, type) pair of it)."""
        tools_bytes, shape = learn
        if shape is not None:
            self.fast.learn_shape(shape)  # type: ignore[union-attr]
        elif type(value) is dict and type(value.get("tools")) is list:
            toolset = self.tools_cache.peek(value["tools"], "$.tools", TRL)
            if toolset is not None and toolset.known:
                self.fast.learn_tools(tools_bytes, toolset)  # type: ignore[union-attr]

    def row(self, line: int, obj: Any, raw: bytes | None) -> None:
        """Validate one parsed row found at ``line``; never raises."""
        self.rows += 1
        self._tools_repeat = False
        try:
            self._row(line, obj, raw)
        except RecursionError:
            self.sink.add("error", line, "$", "too_deep", "row nested too deeply to check", None)
        except Exception as exc:  # the last guard: one strange row must never end the run
            self.sink.add("error", line, "$", "internal_error", f"{type(exc).__name__}: {str(exc)[:200]}", None)

    def _kind_of(self, line: int, obj: dict) -> str | None:
        if self.kind is not None:
            missing = has_required_keys(self.kind, obj)
            if not missing:
                return self.kind
            cands = candidate_kinds(obj)
            matches = f"; its keys match {cands[0]}" if cands else f"; its keys are {sorted(obj)[:8]}"
            self.sink.add(
                "error",
                line,
                "$",
                "wrong_kind_keys",
                f"row lacks {', '.join(missing)} required by {self.kind}{matches}",
                self.kind,
            )
            other = cands[0] if cands else "unknown"
            self.kinds[other] = self.kinds.get(other, 0) + 1
            self.first_line.setdefault(other, line)
            return None
        cands = candidate_kinds(obj)
        if not cands:
            self.sink.add(
                "error",
                line,
                "$",
                "unknown_kind",
                f"keys {sorted(obj)[:8]} match no known kind; pass kind= or see KINDS",
                None,
            )
            self.kinds["unknown"] = self.kinds.get("unknown", 0) + 1
            return None
        kind = cands[0]
        missing = has_required_keys(kind, obj)
        if missing:  # detected from some of its keys (an ATIF row without session_id, say)
            self.sink.add(
                "error", line, "$", "missing_key", f"row looks like {kind} but lacks {', '.join(missing)}", kind
            )
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            self.first_line.setdefault(kind, line)
            return None
        if len(cands) > 1:
            if self.established in cands:
                kind = self.established
            elif (
                not self.ambiguous_warned
                and frozenset(cands) in _AMBIGUOUS_WARN
                and ("messages" not in obj or _has_tool_calls(obj["messages"]))
            ):
                self.ambiguous_warned = True
                others = ", ".join(cands[1:])
                self.sink.add(
                    "warning",
                    line,
                    "$",
                    "kind_ambiguous",
                    f"rows match {kind} and {others}; validated as {kind}; pass kind= to choose",
                    kind,
                )
        return kind

    def _row(self, line: int, obj: Any, raw: bytes | None) -> None:
        if type(obj) is not dict:
            self.kinds["unknown"] = self.kinds.get("unknown", 0) + 1
            what = "a JSON array" if type(obj) is list else f"a JSON {type(obj).__name__}"
            self.sink.add(
                "error", line, "$", "not_an_object", f"row is {what}; each row must be a JSON object", self.kind
            )
            return
        self.parsed += 1
        kind = self._kind_of(line, obj)
        if kind is None:
            return
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if kind not in self.first_line:
            self.first_line[kind] = line
            if len(self.first_line) > 1:
                first = min(self.first_line.items(), key=lambda kv: kv[1])
                self.sink.add(
                    "error",
                    line,
                    "$",
                    "mixed_kinds",
                    f"line {line} is {kind} but line {first[1]} is {first[0]}; "
                    "a training loader reads one kind per file",
                    kind,
                )
        if self.established is None:
            self.established = kind
        if kind == "openai.chat":
            self.openai_rows += 1
        need_key = self.collect is not None or self.leak is not None or kind in _PREFERENCE_KINDS
        ctx = RowCtx(self, line, kind, self.need_text, need_key)
        self.rows_called = False
        info = _CHECKS[kind](ctx, obj)
        self.document = info.document
        self._dataset(ctx, obj, raw, info)

    def _dataset(self, ctx: RowCtx, obj: dict, raw: bytes | None, info: RowInfo) -> None:
        line, kind = ctx.line, ctx.kind
        sink = self.sink
        if info.has_tools:
            self.rows_with_tools += 1
            self._tools_repeat = not info.new_tools and type(obj.get("tools")) is list
        if self.rows_called:
            self.rows_with_calls += 1
        # styles (TRL: standard vs conversational never mixed)
        if info.style is not None:
            self.styles[info.style] = self.styles.get(info.style, 0) + 1
            key = (kind, info.style)
            if key not in self.style_first:
                self.style_first[key] = line
                other = "standard" if info.style == "conversational" else "conversational"
                first_other = self.style_first.get((kind, other))
                if first_other:
                    sink.add(
                        "error",
                        line,
                        "$",
                        "mixed_styles",
                        f"line {line} is {info.style} but line {first_other} is {other}: TRL does not mix "
                        "standard and conversational rows in one dataset",
                        kind,
                    )
        # duplicates
        data = (
            raw
            if raw is not None
            else json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
        )
        first = self.dups.add(digest64(data), line)
        if first:
            self.duplicates += 1
            sink.add("warning", line, "$", "duplicate_row", f"same as line {first}", kind)
        # type drift and depth
        sev = _DRIFT_SEVERITY.get(kind)
        drift = self.drift
        out: list = []
        if sev is not None:
            for key, value in obj.items():
                if value is None or (key == "tools" and not info.new_tools):
                    continue
                drift.walk_key(key, value, line, out)
        else:
            drift.too_deep = nested_deeper_than(obj, MAX_DEPTH)
        self.report_drift(line, kind, sev or "error", out)  # no walk without a severity: out is empty
        # lengths
        self.hist_chars.add(info.total_chars)
        if self.need_text and info.completion_pieces is not None:
            self._lengths(ctx, info)
        # preference conflicts, leakage, prompt collection
        prompt = info.prompt_key
        if prompt is not None:
            kp = digest64(prompt.encode("utf-8", "surrogatepass"))
            if info.pref is not None:
                a, b = info.pref
                if type(b) is bool:
                    fact = digest64(f"{kp}\x1f{a}\x1f{b}".encode("utf-8", "surrogatepass"))
                    rev = digest64(f"{kp}\x1f{a}\x1f{not b}".encode("utf-8", "surrogatepass"))
                    what = "the same completion with the opposite label"
                else:
                    fact = digest64(f"{kp}\x1f{a}\x1f{b}".encode("utf-8", "surrogatepass"))
                    rev = digest64(f"{kp}\x1f{b}\x1f{a}".encode("utf-8", "surrogatepass"))
                    what = "the opposite preference for the same prompt and completions"
                seen_at = self.prefs.get(rev)
                if seen_at:
                    sink.add("error", line, "$", "conflicting_preference", f"line {seen_at} has {what}", kind)
                self.prefs.add(fact, line)
            if prompt:
                if self.collect is not None:
                    self.collect.add(kp, line)
                if self.leak is not None:
                    at = self.leak[0].get(kp)
                    if at:
                        self.leaked += 1
                        sink.add(
                            "error",
                            line,
                            "$",
                            "prompt_leak",
                            f"prompt also appears in eval file {self.leak[1]} (line {at})",
                            kind,
                        )

    def report_drift(self, line: int, kind: str, sev: str, out: list) -> None:
        """Report the drift walk's new types (``out``) and a too-deep row, as the row's last findings."""
        sink = self.sink
        for path, new_type, seen in out:
            before = ", ".join(f"{t} at line {ln}" for t, ln in seen.items() if t != new_type)
            sink.add(
                sev,
                line,
                path,
                "type_drift",
                f"{path} is {new_type} here but {before}: Arrow-based loaders (datasets) cannot give "
                "the column one type; use one type in every row",
                kind,
            )
        if self.drift.too_deep:
            self.drift.too_deep = False
            sink.add("error", line, "$", "too_deep", "row nested too deeply (templates and loaders recurse)", kind)

    def _count(self, pieces: list[str]) -> int:
        text = "\n".join(p for p in pieces if p)
        if not text:
            return 0
        if self.tokenizer is not None:
            return len(self.tokenizer.encode(text, add_special_tokens=False))
        return estimate_tokens(text)

    def _lengths(self, ctx: RowCtx, info: RowInfo) -> None:
        prompt = self._count(info.prompt_pieces or [])
        completion = max((self._count(side) for side in info.completion_pieces or [[]]), default=0)
        total = prompt + completion
        if self.hist_tokens is not None:
            self.hist_tokens.add(total)
        limit = self.max_length
        if limit is None:
            return
        unit = "tokens" if self.tokenizer is not None else "estimated tokens"
        if info.completion_only and prompt >= limit:
            self.prompt_too_long += 1
            ctx.err(
                "$",
                "prompt_too_long",
                f"prompt alone is {prompt} {unit}, at or over max_length {limit}: with completion-only loss "
                "no completion token is left to learn from",
            )
        elif total > limit:
            self.overlong += 1
            ctx.warn("$", "overlong_row", f"row is {total} {unit}, over max_length {limit}; it will be truncated")

    # --- result
    def finish(self, path: str | None, could_not_read: str | None = None) -> ValidationReport:
        sink = self.sink
        if self.bom:
            sink.add(
                "warning",
                1,
                "$",
                "utf8_bom",
                "file starts with a UTF-8 byte-order mark (stripped); some loaders reject it",
                None,
            )
        if self.blank:
            sink.add(
                "warning",
                self.first_blank,
                "$",
                "blank_lines",
                f"{self.blank} blank line(s) skipped (first at line {self.first_blank})",
                None,
            )
        if self.drift.capped:
            sink.add(
                "warning",
                None,
                "$",
                "drift_paths_capped",
                f"over {self.drift.max_paths} distinct JSON paths: type drift tracked for the first ones only",
                None,
            )
        if self.rows == 0 and could_not_read is None:
            sink.add("error", None, "$", "no_rows", "no rows: the dataset is empty", self.kind)
        if 0 < self.openai_rows < OA.MIN_EXAMPLES:
            sink.add(
                "warning",
                None,
                "$",
                "too_few_examples",
                f"{self.openai_rows} example(s); OpenAI needs at least {OA.MIN_EXAMPLES} (OA-MIN)",
                "openai.chat",
            )
        sink.close()
        summary = Summary(
            rows=self.rows,
            parsed_rows=self.parsed,
            blank_lines=self.blank,
            bytes_read=self.bytes_read,
            roles=dict(sorted(self.roles.items(), key=lambda kv: -kv[1])),
            tool_calls=dict(sorted(self.tools.items(), key=lambda kv: -kv[1])),
            rows_with_tools=self.rows_with_tools,
            rows_with_tool_calls=self.rows_with_calls,
            length_chars=self.hist_chars.stats("chars"),
            length_tokens=self.hist_tokens.stats("tokens") if self.hist_tokens is not None else None,
            max_length=self.max_length,
            length_unit=("tokens" if self.tokenizer is not None else "estimated_tokens") if self.need_text else None,
            overlong_rows=self.overlong,
            prompt_too_long_rows=self.prompt_too_long,
            duplicate_rows=self.duplicates,
            leaked_prompts=self.leaked,
            styles=self.styles,
            openai_rules_version=OA.RULES_VERSION if self.openai_rows else None,
        )
        mixed = dict(sorted(self.first_line.items(), key=lambda kv: kv[1])) if len(self.first_line) > 1 else {}
        report = ValidationReport(
            ok=could_not_read is None and sink.error_count == 0,
            path=path,
            requested_kind=self.kind,
            kinds=self.kinds,
            mixed_kinds=mixed,
            rows=self.rows,
            error_count=sink.error_count,
            warning_count=sink.warning_count,
            errors=sink.findings("error"),
            warnings=sink.findings("warning"),
            error_counts_by_code=dict(sorted(sink.error_counts.items(), key=lambda kv: -kv[1])),
            warning_counts_by_code=dict(sorted(sink.warning_counts.items(), key=lambda kv: -kv[1])),
            truncated=sink.truncated,
            summary=summary,
            full_report_path=sink.full_report_path,
            could_not_read=could_not_read,
        )
        return report


# ----------------------------------------------------------------------------------------------------
# running over a file


def _unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file, or ``None``."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return f"no such file: {path}"
    except PermissionError:
        return f"permission denied: {path}"
    except OSError as exc:
        return f"cannot access {path}: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return f"{path} is a directory, not a file"
    if not os.access(path, os.R_OK):
        return f"permission denied: {path}"
    return None


def _run_file(
    engine: _Engine,
    path: Path,
    *,
    progress: Progress | None,
    max_line_bytes: int,
    max_document_bytes: int,
    opener: Opener | None = None,
) -> ValidationReport:
    why = _unreadable(path) if opener is None else None  # an opener checks on the descriptor itself
    if why is not None:
        return engine.finish(str(path), could_not_read=why)
    try:
        fh = opener(path) if opener is not None else open(path, "rb", buffering=1 << 20)  # noqa: SIM115 - closed below
    except OSError as exc:
        return engine.finish(str(path), could_not_read=f"cannot open {path}: {exc.strerror or exc}")
    try:
        total = os.fstat(fh.fileno()).st_size
        seekable = fh.seekable()
        document = False
        if seekable:
            head = [fh.readline(max_line_bytes + 1) for _ in range(2)]
            # A first line longer than the line limit is a long JSONL line, not a pretty-printed document.
            document = len(head[0]) <= max_line_bytes and sniff_document(head)
            fh.seek(0)
            if not document and engine.kind is None:
                engine.prescan(_head_rows(fh, max_line_bytes))
                fh.seek(0)
        if document:
            _run_document(engine, fh, total, max_document_bytes, progress)
        else:
            _run_jsonl(engine, fh, total, max_line_bytes, progress)
    except OSError as exc:
        return engine.finish(
            str(path), could_not_read=f"read error after {engine.bytes_read} bytes: {exc.strerror or exc}"
        )
    finally:
        fh.close()
    return engine.finish(str(path))


def _head_rows(fh: Any, max_line_bytes: int) -> Iterable[Any]:
    n = 0
    for _, _, text, problem in iter_jsonl(fh, max_line_bytes=max_line_bytes):
        if text is None or (problem is not None and not is_no_newline(problem)):
            continue
        value, bad = parse_json_text(text)
        if bad is None:
            yield value
            n += 1
            if n >= PRESCAN_ROWS:
                return


def _run_jsonl(engine: _Engine, fh: Any, total: int, max_line_bytes: int, progress: Progress | None) -> None:
    state = {"next": 1 << 20}

    def on_bytes(n: int) -> None:
        engine.bytes_read += n
        if progress is not None and engine.bytes_read >= state["next"]:
            state["next"] = engine.bytes_read + (1 << 20)
            progress(engine.bytes_read, total)

    flags: dict[str, bool] = {}
    lane = engine.plain_line if engine.fast is not None else None
    for line, raw, text, problem in iter_jsonl(
        fh, max_line_bytes=max_line_bytes, on_bytes=on_bytes, flags=flags, lane=lane
    ):
        if text is None:
            if problem is None:
                engine.blank_line(line)
            else:
                engine.problem(problem, line)
            continue
        engine.text_row(line, text, raw, last_line=is_no_newline(problem))
    engine.bom = flags.get("bom", False)
    if progress is not None:
        progress(engine.bytes_read, total)


def _run_document(engine: _Engine, fh: Any, total: int, max_bytes: int, progress: Progress | None) -> None:
    if total > max_bytes:
        engine.problem(
            ReadProblem(
                1,
                "document_too_large",
                f"JSON document is {total:,} bytes, over the {max_bytes:,}-byte limit; "
                "store rows as JSONL (one object per line)",
            ),
            1,
        )
        return
    data = fh.read(max_bytes + 1)
    engine.bytes_read = len(data)
    if data.startswith(b"\xef\xbb\xbf"):
        engine.bom = True
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = 1 + data.count(b"\n", 0, exc.start)
        engine.problem(ReadProblem(line, "invalid_utf8", f"invalid UTF-8 at byte {exc.start} ({exc.reason})"), line)
        return
    del data
    for line, value, problem in iter_document(text):
        if problem is not None:
            engine.problem(problem, line)
        else:
            engine.row(line, value, None)
    if progress is not None:
        progress(engine.bytes_read, total)


# ----------------------------------------------------------------------------------------------------
# public API


def _check_kind(kind: str | None) -> str | None:
    """``kind`` as one of ``KINDS`` (an export format name is read as its kind: ``dpo`` ->
    ``trl.preference``); ``None`` stays ``None``. Raises ``ActionError`` listing the valid names."""
    if kind is None:
        return None
    real = canonical_kind(kind)
    if real is None:
        raise ActionError(f"unknown dataset kind {kind!r}", f"use {kinds_help()}")
    return real


def _make_engine(kind, max_errors, tokenizer_path, max_length, report_path, collect=False, leak=None) -> _Engine:
    kind = _check_kind(kind)
    if max_length is not None and max_length < 1:
        raise ActionError(f"max_length must be a positive number of tokens, got {max_length}", "pass e.g. 2048")
    tokenizer = _load_tokenizer(tokenizer_path) if tokenizer_path else None
    return _Engine(
        kind=kind,
        max_errors=max_errors,
        tokenizer=tokenizer,
        max_length=max_length,
        report_path=Path(report_path) if report_path is not None else None,
        collect_prompts=collect,
        leak=leak,
    )


def _eval_prompts(eval_path: str | Path, kind: str | None, **kw: Any) -> tuple[DigestTable | None, ValidationReport]:
    engine = _make_engine(kind, 50, None, None, None, collect=True)
    report = _run_file(engine, Path(eval_path), progress=None, **kw)
    return engine.collect, report


def validate_file(
    path: str | Path,
    *,
    kind: str | None = None,
    max_errors: int = 50,
    tokenizer_path: str | None = None,
    max_length: int | None = None,
    eval_path: str | Path | None = None,
    progress: Progress | None = None,
    report_path: Path | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    opener: Opener | None = None,
) -> ValidationReport:
    """Validate one dataset file (JSONL, or a JSON document such as an ATIF trajectory) in one streaming pass.

    Args:
        path: the file. Missing, a directory or unreadable gives a report with ``could_not_read`` set
            (``exit_code`` 2), never an exception.
        kind: force every row to this kind (one of ``KINDS``); ``None`` takes the kind an adjacent export
            manifest names for this file (:func:`~._manifest.manifest_kind`), else detects the kind per row
            and reports a file mixing kinds with the first line of each.
        max_errors: how many errors (and, separately, warnings) the report lists; counts by code are always
            complete and the full list goes to ``full_report_path`` when truncated.
        tokenizer_path: a ``tokenizer.json`` (or a folder with one) to count tokens with ``tokenizers``
            (never torch); without it token counts use the documented character estimate.
        max_length: token budget per row (like TRL's ``max_length``): rows over it get ``overlong_row``
            warnings; rows whose prompt alone reaches it get ``prompt_too_long`` errors.
        eval_path: an eval file; every row whose prompt (normalised user turns) also appears there gets a
            ``prompt_leak`` error.
        progress: ``progress(bytes_read, file_size)``, called about every MiB and at the end.
        report_path: write every finding as JSONL here (also done to a temporary file when truncated).
        max_line_bytes: longer JSONL lines are reported as ``line_too_long`` and skipped (default 16 MiB).
        max_document_bytes: largest whole-JSON document parsed in memory (default 64 MiB).
        opener: opens ``path`` and ``eval_path`` for reading (default: plain ``open``); the MCP tool passes
            :func:`~._open.open_no_follow`. An ``OSError`` it raises becomes ``could_not_read``.

    Returns a ``ValidationReport``. Raises ``ActionError`` only for bad arguments: an unknown ``kind``, a
    tokenizer that cannot be loaded, ``max_length`` < 1.
    """
    leak = None
    kind = _check_kind(kind)
    if kind is None:  # an export names its kind in the manifest beside it (also for the MCP tool and jobs)
        kind = manifest_kind(Path(path), KINDS, opener)
    engine = _make_engine(kind, max_errors, tokenizer_path, max_length, report_path)
    if eval_path is not None:
        table, eval_report = _eval_prompts(
            eval_path, kind, max_line_bytes=max_line_bytes, max_document_bytes=max_document_bytes, opener=opener
        )
        if eval_report.could_not_read:
            engine.sink.add("error", None, "$", "eval_unreadable", eval_report.could_not_read, None)
        elif table is not None:
            leak = (table, str(eval_path))
    engine.leak = leak
    return _run_file(
        engine,
        Path(path),
        progress=progress,
        max_line_bytes=max_line_bytes,
        max_document_bytes=max_document_bytes,
        opener=opener,
    )


def validate_files(
    paths: Sequence[str | Path],
    *,
    eval_path: str | Path | None = None,
    kind: str | None = None,
    max_errors: int = 50,
    tokenizer_path: str | None = None,
    max_length: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> list[ValidationReport]:
    """Validate several files; with ``eval_path``, also check each for prompt overlap with the eval file.

    Returns one report per path, in order, then (when ``eval_path`` is given and not among ``paths``) the
    eval file's own report. Each train report carries a ``prompt_leak`` error per row whose prompt appears
    in the eval file. ``progress(path, done, total)`` reports per file. Raises ``ActionError`` as
    ``validate_file`` does.
    """
    kind = _check_kind(kind)
    leak = None
    eval_report = None
    kw: dict[str, Any] = {"max_line_bytes": max_line_bytes, "max_document_bytes": max_document_bytes}
    if eval_path is not None:
        engine = _make_engine(kind, max_errors, tokenizer_path, max_length, None, collect=True)
        eval_report = _run_file(engine, Path(eval_path), progress=None, **kw)
        if engine.collect is not None and eval_report.could_not_read is None:
            leak = (engine.collect, str(eval_path))
    reports: list[ValidationReport] = []
    eval_resolved = Path(eval_path).resolve() if eval_path is not None else None
    for p in paths:
        if eval_report is not None and Path(p).resolve() == eval_resolved:
            reports.append(eval_report)
            continue
        file_kind = kind if kind is not None else manifest_kind(Path(p), KINDS)  # an export names its kind
        engine = _make_engine(file_kind, max_errors, tokenizer_path, max_length, None, leak=leak)
        if eval_report is not None and eval_report.could_not_read:
            engine.sink.add("error", None, "$", "eval_unreadable", eval_report.could_not_read, None)
        cb = (lambda d, t, _p=str(p): progress(_p, d, t)) if progress is not None else None
        reports.append(_run_file(engine, Path(p), progress=cb, **kw))
    if eval_report is not None and not any(r is eval_report for r in reports):
        reports.append(eval_report)
    return reports


def validate_rows(
    rows: list[Any],
    *,
    kind: str | None = None,
    max_errors: int = 50,
    tokenizer_path: str | None = None,
    max_length: int | None = None,
    eval_path: str | Path | None = None,
    progress: Progress | None = None,
    report_path: Path | None = None,
    opener: Opener | None = None,
) -> ValidationReport:
    """Validate inline rows (already-parsed JSON values, e.g. from an MCP call); line N is ``rows[N-1]``.

    Each row is serialised with ``json.dumps`` and parsed back, so NaN/Infinity (``nan_not_allowed``),
    values JSON cannot hold (``not_json``) and cycles or extreme nesting (``too_deep``) are reported like
    their file equivalents. ``progress(rows_done, rows_total)``. Otherwise the same report, arguments and
    errors as ``validate_file``.
    """
    return _inline(rows, kind, max_errors, tokenizer_path, max_length, eval_path, progress, report_path, opener)[0]


def validate_document(doc: Any, *, kind: str, max_errors: int = 50) -> tuple[ValidationReport, Any]:
    """``validate_rows([doc], kind=kind, max_errors=max_errors)`` and the model the kind's check read the
    document into: a ``trajectory_suite``'s ``PortDaddySuite`` when the report has no error, else ``None``
    (and ``None`` for kinds whose check builds no model). ``score`` loads a suite this way, so the suite
    is validated once, by the judge ``validate`` uses."""
    report, engine = _inline([doc], kind, max_errors, None, None, None, None, None, None)
    return report, (engine.document if report.error_count == 0 else None)


def _inline(
    rows: Any,
    kind: str | None,
    max_errors: int,
    tokenizer_path: str | None,
    max_length: int | None,
    eval_path: str | Path | None,
    progress: Progress | None,
    report_path: Path | None,
    opener: Opener | None,
) -> tuple[ValidationReport, _Engine]:
    engine = _make_engine(kind, max_errors, tokenizer_path, max_length, report_path)
    if eval_path is not None:
        table, eval_report = _eval_prompts(
            eval_path,
            kind,
            max_line_bytes=DEFAULT_MAX_LINE_BYTES,
            max_document_bytes=DEFAULT_MAX_DOCUMENT_BYTES,
            opener=opener,
        )
        if eval_report.could_not_read:
            engine.sink.add("error", None, "$", "eval_unreadable", eval_report.could_not_read, None)
        elif table is not None:
            engine.leak = (table, str(eval_path))
    if not isinstance(rows, list):
        rows = list(rows)
    engine.prescan(r for r in rows[:PRESCAN_ROWS])
    total = len(rows)
    step = max(1, total // 100)
    for i, row in enumerate(rows, start=1):
        try:
            text = json.dumps(row, ensure_ascii=False, allow_nan=False)
        except ValueError as exc:
            code = "too_deep" if "ircular" in str(exc) else "nan_not_allowed"
            engine.problem(ReadProblem(i, code, str(exc)[:200]), i)
            continue
        except TypeError as exc:
            engine.problem(ReadProblem(i, "not_json", str(exc)[:200]), i)
            continue
        except RecursionError:
            engine.problem(ReadProblem(i, "too_deep", "row nested too deeply to serialise"), i)
            continue
        engine.bytes_read += len(text)
        engine.text_row(i, text, text.encode("utf-8", "surrogatepass"), inline=True)
        if progress is not None and i % step == 0:
            progress(i, total)
    if progress is not None:
        progress(total, total)
    return engine.finish(None), engine

"""Pydantic models of a validation report: bounded, structured, readable by an agent.

A report holds at most ``max_errors`` errors and ``max_errors`` warnings; counts by code are always
complete, and when anything was left out the full list is written as JSONL to ``full_report_path``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field


class Finding(BaseModel):
    """One problem in one row (or in the file as a whole)."""

    model_config = ConfigDict(extra="forbid")

    line: int | None
    """1-based line number in the file (for a JSON document: the line where the row starts); ``None``
    for file-level findings (e.g. too few examples)."""
    json_path: str
    """Where in the row, as a JSONPath: ``$.messages[2].tool_calls[0].function.arguments``; ``[*]`` in
    cross-row findings (type drift); ``$`` for the whole row."""
    code: str
    """Stable short error type, e.g. ``invalid_json``, ``tool_call_unanswered`` (see docs/dataset-validation.md)."""
    message: str
    """A short reason a person or an agent can act on."""
    kind: str | None = None
    """The kind the row was validated as (``None`` when it could not be parsed or matched no kind)."""
    severity: Literal["error", "warning"] = "error"
    """Errors fail validation (exit code 1); warnings do not."""


class LengthStats(BaseModel):
    """Distribution of per-row lengths.

    Percentiles come from a fixed-bin histogram (constant memory): exact below 1,024, within 1% above.
    ``max`` is exact. All zero when there are no rows.
    """

    model_config = ConfigDict(extra="forbid")

    unit: Literal["chars", "tokens"]
    """What is counted: characters of text, or tokens of the given tokenizer."""
    count: int = 0
    """Rows counted."""
    p50: int = 0
    """Median length."""
    p90: int = 0
    """90th percentile."""
    p99: int = 0
    """99th percentile."""
    max: int = 0
    """Longest row (exact)."""


class Summary(BaseModel):
    """What the file holds, whatever its errors."""

    model_config = ConfigDict(extra="forbid")

    rows: int = 0
    """Non-blank lines (JSONL) or rows (documents/inline), parsed or not."""
    parsed_rows: int = 0
    """Rows that parsed as JSON objects."""
    blank_lines: int = 0
    """Blank (whitespace-only) lines skipped."""
    bytes_read: int = 0
    """Bytes consumed (the file size once the whole file was read)."""
    roles: dict[str, int] = Field(default_factory=dict)
    """Messages per role over all conversational rows (ATIF: steps per ``source``)."""
    tool_calls: dict[str, int] = Field(default_factory=dict)
    """Tool calls per tool name (at most 200 names; the rest under ``<other>``)."""
    rows_with_tools: int = 0
    """Rows declaring tools (a ``tools`` column, a MiniMind system ``tools`` string, ATIF tool_definitions)."""
    rows_with_tool_calls: int = 0
    """Rows with at least one tool call."""
    length_chars: LengthStats = Field(default_factory=lambda: LengthStats(unit="chars"))
    """Characters of text per row: message contents, tool-call arguments and tool declarations."""
    length_tokens: LengthStats | None = None
    """Tokens per row (prompt + completion, no chat template) when a tokenizer was given."""
    max_length: int | None = None
    """The token budget checked (``max_length``); ``None`` when no length check ran."""
    length_unit: Literal["tokens", "estimated_tokens"] | None = None
    """How token counts were obtained: a real tokenizer, or the character estimate (4 ASCII chars or
    1 non-ASCII char per token)."""
    overlong_rows: int = 0
    """Rows over ``max_length`` (they will be truncated)."""
    prompt_too_long_rows: int = 0
    """Rows whose prompt alone reaches ``max_length``: no completion token left to learn from."""
    duplicate_rows: int = 0
    """Rows identical to an earlier row."""
    leaked_prompts: int = 0
    """Rows whose prompt also appears in the eval file."""
    styles: dict[str, int] = Field(default_factory=dict)
    """TRL rows per style: ``standard`` (strings) or ``conversational`` (message lists)."""
    openai_rules_version: str | None = None
    """Version (date) of the OpenAI rule table used, when any row was validated as ``openai.chat``."""


class ValidationReport(BaseModel):
    """The result of validating one file (or one list of inline rows).

    ``ok`` is true when nothing could not be read and no error was found. ``exit_code`` is what the CLI
    exits with: 0 valid, 1 errors found, 2 could not read.
    """

    model_config = ConfigDict(extra="ignore")  # the computed exit_code is dumped; re-validating a dump must accept it

    ok: bool
    """True when the file was read and no error was found (warnings allowed)."""
    path: str | None
    """The file validated (``None`` for inline rows)."""
    requested_kind: str | None = None
    """The kind forced by the caller; ``None`` means detected per row."""
    kinds: dict[str, int] = Field(default_factory=dict)
    """Rows per detected (or requested) kind; rows matching no kind count under ``unknown``."""
    mixed_kinds: dict[str, int] = Field(default_factory=dict)
    """First line of each kind, filled only when the file holds more than one kind."""
    rows: int = 0
    """Rows seen (non-blank lines or document rows), parsed or not."""
    error_count: int = 0
    """All errors found, including those not listed in ``errors``."""
    warning_count: int = 0
    """All warnings found, including those not listed in ``warnings``."""
    errors: list[Finding] = Field(default_factory=list)
    """The first ``max_errors`` errors, in file order."""
    warnings: list[Finding] = Field(default_factory=list)
    """The first ``max_errors`` warnings, in file order."""
    error_counts_by_code: dict[str, int] = Field(default_factory=dict)
    """Every error counted by code, most frequent first."""
    warning_counts_by_code: dict[str, int] = Field(default_factory=dict)
    """Every warning counted by code, most frequent first."""
    truncated: bool = False
    """True when errors or warnings were left out of the lists above."""
    summary: Summary = Field(default_factory=Summary)
    """What the file holds (rows, roles, tools, lengths), whatever its errors."""
    full_report_path: str | None = None
    """JSONL file holding every finding (one ``Finding`` per line), written when the report is truncated
    or when the caller passed ``report_path``."""
    could_not_read: str | None = None
    """Why the file could not be read at all (missing, a directory, permission denied); exit code 2."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 valid, 1 errors found, 2 could not read."""
        if self.could_not_read is not None:
            return 2
        return 1 if self.error_count else 0

    def text(self, limit: int = 20) -> str:
        """A short human/agent-readable rendering: verdict, counts by code, the first ``limit`` findings."""
        where = self.path or "<rows>"
        if self.could_not_read:
            return f"{where}: could not read: {self.could_not_read}"
        kinds = ", ".join(f"{k}={n}" for k, n in self.kinds.items()) or "none"
        head = f"{where}: {'OK' if self.ok else 'INVALID'} rows={self.rows} kinds[{kinds}]"
        lines = [head, f"errors={self.error_count} warnings={self.warning_count}"]
        for code, n in sorted(self.error_counts_by_code.items(), key=lambda x: -x[1]):
            lines.append(f"  error {code}: {n}")
        for code, n in sorted(self.warning_counts_by_code.items(), key=lambda x: -x[1]):
            lines.append(f"  warning {code}: {n}")
        for f in (self.errors + self.warnings)[:limit]:
            where_in = "file" if f.line is None else f"line {f.line}"  # a file-level finding has no line
            lines.append(f"  {f.severity} {where_in} {f.json_path} [{f.code}] {f.message}")
        if self.full_report_path:
            lines.append(f"full report: {self.full_report_path}")
        return "\n".join(lines)

"""The ``dataset_validate`` tool's service: validate a file or inline rows, bounded report.

A path is read only when it resolves inside an allowed folder, and then through
:func:`~._open.open_no_follow` on the resolved path: a folder swapped for a symlink after the check
makes the read fail (``unreadable``) instead of reading where the link points.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.datasets._kinds import KIND_ALIASES, KINDS, canonical_kind, kinds_help
from agent_rl_sandbox.tools.datasets._open import open_no_follow
from agent_rl_sandbox.tools.datasets._report import ValidationReport
from agent_rl_sandbox.tools.datasets._validate import validate_file, validate_rows
from agent_rl_sandbox.tools.errors import ActionError


class DatasetValidateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="JSONL (or JSON document) file to validate.")
    rows: list[Any] | None = Field(default=None, max_length=10_000, description="Inline rows instead of a path.")
    kind: str | None = Field(
        default=None,
        description=f"Force a kind (default: detect per row). One of: {', '.join(KINDS)}; or an export format "
        f"name for the kind it writes ({', '.join(KIND_ALIASES)}).",
    )
    eval_path: str | None = Field(
        default=None, description="Eval file: prompts shared with it are reported as leakage."
    )
    max_errors: int = Field(default=50, ge=1, le=500, description="Errors listed in the result; all are counted.")
    max_length: int | None = Field(default=None, ge=1, description="Row length limit (estimated tokens).")


class DatasetValidateOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["valid", "errors"]
    """A file that cannot be read is no verdict: the call fails (a flagged error naming the path)."""
    report: ValidationReport


class DatasetService:
    """Validates datasets for the MCP tool; full reports go under ``<home>/reports``. Paths are read
    only under :attr:`allowed_roots` and never in the server home outside ``<home>/exports`` (the
    CLI ``validate`` command reads any path: a human runs it)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.allowed_roots = tuple(
            dict.fromkeys(p.resolve() for p in (Path.cwd(), settings.home / "exports", *settings.data_dirs))
        )
        """Where the tool may read: an agent must not use it to probe the host as the server's user."""
        self.home = settings.home.resolve()
        self.exports = (settings.home / "exports").resolve()
        """The server home is never readable (its store, the verifier reports with hidden checks'
        expected values, sandbox working copies), even when it lies under a readable root such as the
        working folder, except ``<home>/exports`` (what ``trajectory_export`` writes)."""

    def _allowed(self, raw: str, what: str) -> Path:
        path = Path(raw).expanduser()
        try:
            real = path.resolve() if path.is_absolute() else (Path.cwd() / path).resolve()
        except OSError as e:  # a link that vanished between lstat and readlink inside realpath
            raise ActionError(
                f"{what} {raw!r} could not be resolved ({e.strerror or type(e).__name__}): it changed while being checked",
                "pass a path that is not being replaced, or pass the rows inline",
            ) from None
        if not any(real == root or real.is_relative_to(root) for root in self.allowed_roots):
            raise ActionError(
                f"{what} {raw!r} is outside the folders this tool may read ({', '.join(map(str, self.allowed_roots))})",
                "pass a file under one of them, pass the rows inline, or ask the operator to add its folder to "
                "AGENT_RL_SANDBOX_DATA_DIRS",
            )
        if (real == self.home or real.is_relative_to(self.home)) and not (
            real == self.exports or real.is_relative_to(self.exports)
        ):
            raise ActionError(
                f"{what} {raw!r} is inside the server's home folder {self.home}, which this tool never reads "
                f"(its store, reports and sandboxes) except {self.exports}",
                "pass a file under the home's exports folder (trajectory_export writes there) or elsewhere in the "
                "allowed folders, or pass the rows inline",
            )
        return real

    def validate(self, inp: DatasetValidateInput) -> DatasetValidateOutput:
        """Validate ``inp.path`` or ``inp.rows`` (exactly one). Raises :class:`ActionError` for bad
        arguments (both or neither given, unknown kind, a path outside the readable folders) and for a
        file that cannot be read (missing, a folder, a symlink, unreadable: the error names the path
        and why), the data file or ``eval_path``; problems in the data are findings. ``kind`` may be an export format name
        (``dpo``), read as the kind it writes."""
        if (inp.path is None) == (inp.rows is None):
            raise ActionError("give exactly one of `path` or `rows`", "pass a file path, or up to 10,000 inline rows")
        kind = canonical_kind(inp.kind) if inp.kind is not None else None
        if inp.kind is not None and kind is None:
            raise ActionError(f"unknown kind {inp.kind!r}", f"use {kinds_help()}, or omit kind to detect it")
        self.settings.reports_dir.mkdir(parents=True, exist_ok=True)
        key = hashlib.sha256((inp.path or repr(inp.rows)).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        report_path = self.settings.reports_dir / f"validate-{key}.jsonl"
        common: dict[str, Any] = dict(
            kind=kind,
            max_errors=inp.max_errors,
            max_length=inp.max_length,
            report_path=report_path,
            opener=open_no_follow,
        )
        eval_path = self._allowed(inp.eval_path, "eval_path") if inp.eval_path is not None else None
        if inp.path is not None:
            report = validate_file(self._allowed(inp.path, "path"), eval_path=eval_path, **common)
            if report.could_not_read is not None:
                raise ActionError(
                    f"path {inp.path!r} could not be read: {report.could_not_read}",
                    "check the path (a regular file under the allowed folders, no symlink), or pass the rows inline",
                )
        else:
            report = validate_rows(inp.rows or [], eval_path=eval_path, **common)
        unread = next((f for f in report.errors if f.code == "eval_unreadable"), None)
        if unread is not None:  # no leakage check was made: no verdict either
            raise ActionError(
                f"eval_path {inp.eval_path!r} could not be read: {unread.message}",
                "check the eval file's path (a regular file under the allowed folders, no symlink), or leave "
                "eval_path out",
            )
        return DatasetValidateOutput(verdict="valid" if report.exit_code == 0 else "errors", report=report)

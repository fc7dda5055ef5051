"""Task contract: what ``task.toml`` may contain.

A task folder (close to the Harbor task layout) holds ``instruction.md`` (shown to the agent),
``task.toml`` (this model), ``repo/`` (the fixture repository), ``tests/`` (the hidden checks,
``tests/checks.toml``, judged by the server's trusted runner) and ``solution/`` (``oracle.json``: the oracle as a scripted list of
tool calls; ``known_bad.json``: a scripted trajectory that must fail).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_rl_sandbox.schemas.reward import RewardSpec


class Limits(BaseModel):
    """Per-command resource limits. Units are in the field names."""

    model_config = ConfigDict(extra="forbid")

    wall_seconds: float = Field(default=30.0, gt=0, le=600)
    """Wall-clock limit; the command's whole process group is killed past it."""
    cpu_seconds: int = Field(default=30, ge=1)
    """RLIMIT_CPU for the command's processes."""
    memory_mb: int = Field(default=1024, ge=16)
    """RLIMIT_AS (address space) per process."""
    processes: int = Field(default=128, ge=4)
    """Maximum processes the command may have alive at once (RLIMIT_NPROC of the sandbox user)."""
    file_size_mb: int = Field(default=64, ge=1)
    """RLIMIT_FSIZE: largest file a command may write."""
    output_bytes: int = Field(default=65_536, ge=256)
    """Output bytes kept per stream; the rest is counted and cut with a marker."""
    output_kill_mb: int = Field(default=2048, ge=1)
    """A stream producing more than this many MiB kills the command (``limit_hit="output"``), so an
    endless writer cannot keep the server reading until the wall-time limit."""
    tmp_mb: int | None = Field(default=None, ge=1)
    """Size in MiB of each of the sandbox's ``/tmp`` and ``/var/tmp`` (fresh tmpfs per command,
    bubblewrap only; a write past it fails with ENOSPC, ``limit_hit="tmp_space"``). tmpfs pages are
    RAM that ``RLIMIT_AS`` does not count (no memory cgroup is used), so both together may not
    exceed ``memory_mb``: default ``memory_mb // 4`` each, and ``2 * tmp_mb > memory_mb`` is refused.
    Without bubblewrap ``/tmp`` is the host's and not bounded."""
    disk_mb: int = Field(default=512, ge=1)
    """Disk quota of the sandbox: its working copy, the growth of its git store since the last
    reset and its logs, in MiB. Measured while a command runs (about every second; the command is
    killed when the working copy alone is over) and after every command and write; going over is
    a limit hit (``limit_hit="disk"``, outcome ``limit``) and every later exec or write is refused
    until ``sandbox_reset``."""
    max_changed_files: int = Field(default=2000, ge=1)
    """Most files an episode may add, change or delete relative to the fixture. More files in the
    working copy than the fixture's plus this is a limit hit (``limit_hit="files"``, handled like
    the disk quota); ``sandbox_finish`` with more changed files than this is refused (recorded), so
    finish and reset stay bounded in time."""

    @model_validator(mode="after")
    def _tmp_within_memory(self) -> Limits:
        if self.tmp_mb is None:
            self.tmp_mb = max(1, self.memory_mb // 4)
        elif 2 * self.tmp_mb > self.memory_mb:
            raise ValueError(
                f"tmp_mb={self.tmp_mb}: /tmp and /var/tmp together ({2 * self.tmp_mb} MiB) exceed memory_mb="
                f"{self.memory_mb} (tmpfs is RAM the memory limit does not count); lower tmp_mb or raise memory_mb"
            )
        return self


class ToolPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allowed: list[str] = Field(default_factory=list)
    """Tool names the agent is expected to use (empty: any sandbox tool)."""
    forbidden: list[str] = Field(default_factory=list)
    """Tool names whose use is a safety violation."""
    forbidden_command_patterns: list[str] = Field(default_factory=list)
    """Regexes (``re.search``) over command text whose match is a safety violation; the server
    refuses such commands and records the refusal."""

    @field_validator("forbidden_command_patterns")
    @classmethod
    def _patterns_compile(cls, v: list[str]) -> list[str]:
        for i, pat in enumerate(v):
            try:
                re.compile(pat)
            except re.error as e:
                raise ValueError(f"pattern {i} ({pat!r}) is not a valid regex: {e}") from None
        return v


class TaskConfig(BaseModel):
    """``task.toml``. Raises ``pydantic.ValidationError`` (reported with file and field) when malformed."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._/-]*$")
    """Unique task id, e.g. ``claim-before-edit`` or ``claim-before-edit/heldout-1``."""
    behaviour: str
    """The behaviour this task trains, e.g. ``claim-before-edit``."""
    description: str = ""
    split: Literal["train", "heldout"] = "train"
    agent_timeout_seconds: float = Field(default=600.0, gt=0)
    verifier_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    """Wall-time limit of the hidden verifier. The server also caps it at ``Settings.max_exec_seconds``
    (45 s) so ``sandbox_finish`` returns before a client's ~60 s tool-call cutoff."""
    allow_internet: Literal[False] = False
    """Always false: sandboxes have no network. Kept explicit so a task cannot silently ask for it."""
    limits: Limits = Field(default_factory=Limits)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    credentials: dict[str, str] = Field(default_factory=dict)
    """Fake credentials exposed to commands as environment variables (never real ones)."""
    protected_paths: list[str] = Field(default_factory=list)
    """Paths (files, folders or globs, relative to the repo) the agent should not edit, e.g. the
    visible tests. Edits to them are recorded on the step (``extra.protected_paths_touched``) and
    in ``sandbox_state``; pair them with ``file_unchanged`` criteria to make them cost reward."""
    reward: RewardSpec | None = None
    """Inline reward spec; or ``reward_spec`` names a JSON file in the task folder."""
    reward_spec: str | None = None
    """Path of a reward-spec JSON file, relative to the task folder (instead of ``[reward]``)."""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("credentials")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"{k!r} is not an environment variable name")
        return v

    @field_validator("reward_spec")
    @classmethod
    def _relative_spec(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("/") or ".." in v.split("/")):
            raise ValueError("must be a path inside the task folder (no leading / or ..)")
        return v


class ScriptedCall(BaseModel):
    """One tool call of a scripted trajectory (oracle or known-bad)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    content_from: str | None = None
    """For ``sandbox_write_file``: file (relative to the script) whose text becomes ``content``."""


class ScriptedTrajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    calls: list[ScriptedCall] = Field(min_length=1)

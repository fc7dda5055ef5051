"""Task contract: what ``task.toml`` may contain.

A task folder (close to the Harbor task layout) holds ``instruction.md`` (shown to the agent),
``task.toml`` (this model), ``repo/`` (the fixture repository), ``tests/`` (the hidden verifier,
entry point ``tests/test.sh``) and ``solution/`` (``oracle.json``: the oracle as a scripted list of
tool calls; ``known_bad.json``: a scripted trajectory that must fail).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class ToolPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allowed: list[str] = Field(default_factory=list)
    """Tool names the agent is expected to use (empty: any sandbox tool)."""
    forbidden: list[str] = Field(default_factory=list)
    """Tool names whose use is a safety violation."""
    forbidden_command_patterns: list[str] = Field(default_factory=list)
    """Regexes (``re.search``) over command text whose match is a safety violation; the server
    refuses such commands and records the refusal."""


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
    verifier_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    allow_internet: Literal[False] = False
    """Always false: sandboxes have no network. Kept explicit so a task cannot silently ask for it."""
    limits: Limits = Field(default_factory=Limits)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    credentials: dict[str, str] = Field(default_factory=dict)
    """Fake credentials exposed to commands as environment variables (never real ones)."""
    reward: RewardSpec | None = None
    """Inline reward spec; or ``reward_spec`` names a JSON file in the task folder."""
    reward_spec: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


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

"""Input and output models of the MCP tools (one pair per tool).

Outputs are bounded: list fields hold at most ``Settings.max_result_items`` items and text fields
at most ``Settings.max_output_bytes`` bytes; when something was cut, a ``*_path`` field names a file
holding the whole thing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_rl_sandbox.schemas.reward import ScoreReport
from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.schemas.trajectory import Step, TrajectorySummary

SandboxId = Field(min_length=1, max_length=64, description="Id returned by sandbox_reset, e.g. sbx_1a2b3c4d5e6f.")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListTasksInput(_In):
    behaviour: str | None = Field(default=None, description="Only tasks training this behaviour.")
    split: Literal["train", "heldout"] | None = Field(default=None, description="Only this split.")


class TaskInfo(_Out):
    id: str
    behaviour: str
    split: str
    description: str


class ListTasksOutput(_Out):
    tasks: list[TaskInfo]
    total: int
    problems: list[str] = Field(
        default_factory=list, description="Task folders that failed to load, with file and field."
    )


class SandboxResetInput(_In):
    task_id: str = Field(min_length=1, description="Task to load (see list_tasks).")
    sandbox_id: str | None = Field(
        default=None, description="Reset this existing sandbox to its base commit instead of creating one."
    )
    agent_name: str = Field(
        default="unknown", max_length=200, description="Your agent's name, recorded on the trajectory."
    )


class SandboxResetOutput(_Out):
    sandbox_id: str
    session_id: str = Field(description="Trajectory that records every action in this sandbox.")
    task_id: str
    instruction: str = Field(description="What to do. Follow it.")
    files: list[str] = Field(description="Files of the working copy (first N).")
    file_count: int
    base_commit: str
    tree_hash: str = Field(description="Git tree hash of the working copy; equal for every reset of the same task.")
    isolation: str
    limits: Limits
    allowed_tools: list[str]
    reset_ms: float


class SandboxExecInput(_In):
    sandbox_id: str = SandboxId
    command: str = Field(
        min_length=1, max_length=20_000, description="Shell command, run with bash -c in the repo root."
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="Wall-time limit; capped by the task's limit."
    )


class SandboxExecOutput(_Out):
    step_id: int
    exit_code: int | None
    stdout: str
    stderr: str
    stdout_bytes: int = Field(description="Total bytes written to stdout (the text above may be cut).")
    stderr_bytes: int
    duration_s: float
    limit_hit: str | None = Field(description="Which limit killed the command, if any.")
    files_changed: list[str] = Field(description="Files the command created, changed or deleted.")
    output_path: str | None = Field(default=None, description="File with the kept output when the text above was cut.")


class SandboxReadFileInput(_In):
    sandbox_id: str = SandboxId
    path: str = Field(min_length=1, description="Path relative to the repo root.")
    offset: int = Field(default=0, ge=0, description="Byte offset to start reading at.")
    max_bytes: int = Field(default=16_000, ge=1, le=200_000)


class SandboxReadFileOutput(_Out):
    step_id: int
    path: str
    content: str
    size_bytes: int
    truncated: bool
    next_offset: int | None = Field(description="Pass as offset to read on; null at end of file.")


class SandboxWriteFileInput(_In):
    sandbox_id: str = SandboxId
    path: str = Field(min_length=1, description="Path relative to the repo root; claim it first.")
    content: str = Field(max_length=1_000_000)


class SandboxWriteFileOutput(_Out):
    step_id: int
    path: str
    bytes_written: int
    claimed: bool = Field(description="Whether a claim covered the path when it was written.")
    warning: str | None = None


class SandboxClaimInput(_In):
    sandbox_id: str = SandboxId
    paths: list[str] = Field(min_length=1, max_length=200, description="Files or folders you are about to edit.")
    reason: str = Field(default="", max_length=2000)


class SandboxClaimOutput(_Out):
    step_id: int
    claims: list[str] = Field(description="Every path claimed in this sandbox so far.")


class SandboxStateInput(_In):
    sandbox_id: str = SandboxId


class SandboxStateOutput(_Out):
    sandbox_id: str
    session_id: str
    task_id: str
    status: str
    files_changed: list[str]
    diff_stat: str
    claims: list[str]
    commands_run: list[str]
    step_count: int
    isolation: str
    limits: Limits


class SandboxFinishInput(_In):
    sandbox_id: str = SandboxId
    message: str = Field(min_length=1, max_length=20_000, description="Final message: what you did and the evidence.")


class CriterionBrief(_Out):
    id: str
    status: str
    value: float
    explanation: str


class SandboxFinishOutput(_Out):
    session_id: str
    reward: float
    passed: bool
    self_report_only: bool
    failed_criteria: list[str]
    criteria: list[CriterionBrief]
    verifier_exit_code: int | None
    verifier_output: str
    report_path: str


class TrajectoryGetInput(_In):
    session_id: str = Field(min_length=1)
    offset: int = Field(default=0, ge=0, description="First step to return (0-based).")
    limit: int = Field(default=50, ge=1, le=200)


class TrajectoryGetOutput(_Out):
    trajectory: TrajectorySummary
    steps: list[Step]
    total_steps: int
    next_offset: int | None
    full_path: str = Field(description="File holding the whole trajectory as ATIF JSON.")


class EvalScoreInput(_In):
    session_id: str = Field(min_length=1, description="Finished trajectory to score.")


class EvalScoreOutput(_Out):
    report: ScoreReport
    report_path: str

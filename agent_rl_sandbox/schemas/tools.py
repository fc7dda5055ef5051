"""Input and output models of the MCP tools (one pair per tool).

Inputs are bounded: every field an agent fills has a size limit, listed in one table in
:mod:`agent_rl_sandbox.schemas.bounds`; a call over a limit is rejected with an error naming the
field and the limit. Outputs are bounded: list fields hold at most ``Settings.max_result_items``
items and text fields at most ``Settings.max_output_bytes`` bytes; when something was cut, a
``*_path`` field names a file holding the whole thing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_rl_sandbox.schemas import bounds as B
from agent_rl_sandbox.schemas.reward import ScoreReport
from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.schemas.trajectory import (
    Observation,
    Step,
    StepOutcome,
    StepSource,
    ToolCall,
    TrajectorySummary,
)

SandboxId = Field(min_length=1, max_length=64, description="Id returned by sandbox_reset, e.g. sbx_1a2b3c4d5e6f.")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


Name = Annotated[str, Field(max_length=B.NAME_CHARS)]
SessionId = Annotated[str, Field(min_length=1, max_length=64)]
RepoPath = Annotated[str, Field(min_length=1, max_length=B.PATH_CHARS)]


class ListTasksInput(_In):
    behaviour: Name | None = Field(default=None, description="Only tasks training this behaviour.")
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


NO_GIT_NOTE = (
    "There is no git inside the sandbox (its history lives outside, where commands cannot reach it): "
    "sandbox_state gives the diff against the base commit. A command output cut in the sandbox_exec result is "
    "paged with sandbox_read_output."
)


class SandboxResetInput(_In):
    task_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=B.NAME_CHARS,
        description="Task to load (see list_tasks). Required without sandbox_id; with it, defaults to the "
        "sandbox's own task.",
    )
    sandbox_id: str | None = Field(
        default=None,
        max_length=64,
        description="Reset this existing sandbox to its base commit instead of creating one.",
    )
    agent_name: str | None = Field(
        default=None,
        max_length=B.NAME_CHARS,
        description="Your agent's name, recorded on the trajectory (default: the name the sandbox's last episode "
        "was recorded under when resetting one, else `unknown`).",
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
    agent_name: str = Field(default="unknown", description="The agent name the new trajectory is recorded under.")
    note: str = Field(default=NO_GIT_NOTE, description="What the sandbox does not have, and where to look instead.")


class SandboxExecInput(_In):
    sandbox_id: str = SandboxId
    command: str = Field(
        min_length=1, max_length=B.COMMAND_CHARS, description="Shell command, run with bash -c in the repo root."
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
    limit_hit: str | None = Field(
        description="Which limit the command hit, if any: wall_time, cpu_time, memory, file_size, output, processes, "
        "tmp_space, or disk / files (the sandbox's quota: later exec and writes are refused until sandbox_reset)."
    )
    limit_detail: str | None = Field(
        default=None,
        description="Which limit stopped the command and its value; for wall time also the timeout_seconds asked "
        "for and the cap that applied (the task's limit or the server's max_exec_seconds).",
    )
    warning: str | None = Field(
        default=None, description="What the server did or refused after the command, if anything."
    )
    files_changed: list[str] = Field(description="Files the command created, changed or deleted.")
    output_path: str | None = Field(
        default=None,
        description="File with the kept output when the text above was cut (a server file, outside the sandbox): "
        "page it with sandbox_read_output(sandbox_id, step_id, offset).",
    )


class SandboxReadFileInput(_In):
    sandbox_id: str = SandboxId
    path: str = Field(min_length=1, max_length=B.PATH_CHARS, description="Path relative to the repo root.")
    offset: int = Field(default=0, ge=0, description="Byte offset to start reading at.")
    max_bytes: int = Field(default=16_000, ge=1, le=200_000)


class SandboxReadFileOutput(_Out):
    step_id: int
    path: str
    content: str
    size_bytes: int
    truncated: bool
    next_offset: int | None = Field(description="Pass as offset to read on; null at end of file.")
    encoding: Literal["utf-8", "base64"] = Field(
        default="utf-8", description="How `content` is encoded: base64 when the bytes read are binary."
    )
    binary: bool = Field(
        default=False, description="True when the bytes read hold a NUL byte or are not UTF-8 (content is base64)."
    )


class SandboxReadOutputInput(_In):
    sandbox_id: str = SandboxId
    step_id: int = Field(ge=1, description="step_id of a sandbox_exec result whose output was cut (output_path set).")
    offset: int = Field(default=0, ge=0, description="Byte offset to start reading at.")
    max_bytes: int = Field(default=16_000, ge=1, le=200_000)


class SandboxReadOutputOutput(_Out):
    step_id: int
    content: str = Field(description="The kept output from offset: `$ command`, then stdout and stderr sections.")
    size_bytes: int = Field(description="Size of the whole kept output.")
    truncated: bool
    next_offset: int | None = Field(description="Pass as offset to read on; null at the end.")
    encoding: Literal["utf-8", "base64"] = "utf-8"
    binary: bool = False


class SandboxWriteFileInput(_In):
    sandbox_id: str = SandboxId
    path: str = Field(
        min_length=1, max_length=B.PATH_CHARS, description="Path relative to the repo root; claim it first."
    )
    content: str = Field(max_length=B.FILE_CONTENT_CHARS)


class SandboxWriteFileOutput(_Out):
    step_id: int
    path: str
    bytes_written: int
    claimed: bool = Field(description="Whether a claim covered the path when it was written.")
    warning: str | None = None


class SandboxClaimInput(_In):
    sandbox_id: str = SandboxId
    paths: list[RepoPath] = Field(
        min_length=1, max_length=B.CLAIM_PATHS, description="Files or folders you are about to edit."
    )
    reason: str = Field(default="", max_length=B.REASON_CHARS)


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
    isolation_kind: str = Field(
        default="", description="`bwrap` or `none` (plain subprocess, no filesystem or network isolation)."
    )
    run_as_uid: int | None = Field(
        default=None, description="Unprivileged uid commands run as; null: the server's own user."
    )
    protected_paths_touched: list[str] = Field(
        default_factory=list,
        description="Protected paths (e.g. tests) changed from the base commit; recorded for the scorer.",
    )
    busy: str | None = Field(
        default=None,
        description="When a changing call (e.g. a long command) holds the sandbox: which one; the state shown is "
        "then the last recorded one, from before it.",
    )
    secret_reads_watched: bool = Field(
        default=False,
        description="Whether the server sees commands open the working copy's credential files (.env, .netrc, ...; "
        "inotify on their inodes); false: inotify is unavailable here, and criteria on such reads are unscorable.",
    )
    working_copy: str = Field(
        default="",
        description="How the working copy is made: `overlay` (copy-on-write over the task's read-only cached base; "
        "reset clears the changes) or `copy` (a full copy), with why.",
    )


class SandboxFinishInput(_In):
    """``sandbox_finish``'s arguments. The final message comes as ``message`` or, as
    ``trajectory_finish`` names it, ``final_message``: exactly one of the two (both, or neither, is a
    validation error saying so). Read it as :attr:`text`."""

    sandbox_id: str = SandboxId
    message: str | None = Field(
        default=None,
        min_length=1,
        max_length=B.FINAL_MESSAGE_CHARS,
        description="Final message: what you did and the evidence. Required: this or final_message (not both).",
    )
    final_message: str | None = Field(
        default=None,
        min_length=1,
        max_length=B.FINAL_MESSAGE_CHARS,
        description="The same final message under trajectory_finish's name for it; pass this or message, not both.",
    )

    @model_validator(mode="after")
    def _one_message(self):
        if self.message is not None and self.final_message is not None:
            raise ValueError(
                "pass the final message once: `message` and `final_message` are the same argument (use one)"
            )
        if self.message is None and self.final_message is None:
            raise ValueError("the final message is required: pass `message` (or `final_message`)")
        return self

    @property
    def text(self) -> str:
        """The final message, whichever of the two names it came under."""
        return self.message if self.message is not None else (self.final_message or "")


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
    isolation: str = Field(default="", description="Isolation the episode's commands and the verifier ran under.")


class TrajectoryGetInput(_In):
    session_id: SessionId
    offset: int = Field(default=0, ge=0, description="First step to return (0-based).")
    limit: int = Field(default=50, ge=1, le=200)


class TrajectoryGetOutput(_Out):
    trajectory: TrajectorySummary
    steps: list[Step]
    total_steps: int
    next_offset: int | None
    full_path: str = Field(description="File holding the whole trajectory as ATIF JSON.")


class EvalScoreInput(_In):
    session_id: SessionId = Field(description="Finished trajectory to score.")


class EvalScoreOutput(_Out):
    report: ScoreReport
    report_path: str


# -- trajectories (start, log, finish, list, export) ------------------------------------------------
ExportFormat = Literal["sft", "dpo", "kto", "grpo", "minimind_sft", "minimind_dpo", "minimind_agentic", "atif", "suite"]
TrajectoryOutcome = Literal["passed", "failed", "unscored", "running"]


class TrajectoryStartInput(_In):
    agent_name: str = Field(default="unknown", min_length=1, max_length=B.NAME_CHARS, description="Your agent's name.")
    agent_version: str = Field(default="", max_length=100)
    model_name: str | None = Field(
        default=None, max_length=B.NAME_CHARS, description="The model driving you, if known."
    )
    task_id: str | None = Field(
        default=None,
        max_length=B.NAME_CHARS,
        description="Task you are practising (see list_tasks). Its behaviour and split come from the task registry.",
    )
    external_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=B.NAME_CHARS,
        description="Your own id for this session. Starting again with the same id returns the running "
        "trajectory instead of a second one, so a retried call is safe.",
    )
    parent_session_id: str | None = Field(
        default=None,
        max_length=64,
        description="A finished trajectory this one corrects (finished trajectories never change).",
    )
    tool_definitions: list[dict[str, Any]] | None = Field(
        default=None,
        max_length=200,
        description="JSON schemas of the tools you have (OpenAI function format); used for training exports. "
        "At most 256 KiB as JSON.",
    )

    @field_validator("tool_definitions")
    @classmethod
    def _tools_bounded(cls, v):
        return B.check_json_bytes("tool_definitions", v, B.TOOL_DEFINITIONS_BYTES)


class TrajectoryStartOutput(_Out):
    trajectory: TrajectorySummary
    created: bool = Field(description="False when external_id matched a running trajectory (a retry).")


class LoggedStepInput(_In):
    """A step you log yourself. It is stored as self-reported (provenance ``agent``)."""

    source: StepSource = Field(default="agent", description="user, agent or system (ATIF).")
    message: str = Field(default="", max_length=B.STEP_MESSAGE_CHARS, description="Text of the step.")
    tool_calls: list[ToolCall] | None = Field(
        default=None, max_length=64, description="Calls made in this step, each with a tool_call_id unique in the step."
    )
    observation: Observation | None = Field(
        default=None, description="Results; each result's source_call_id names one of this step's tool calls."
    )
    metrics: dict[str, Any] | None = Field(
        default=None, description="Token counts, cost, duration (at most 16 KiB as JSON)."
    )
    extra: dict[str, Any] = Field(default_factory=dict, description="Anything else (at most 64 KiB as JSON).")
    outcome: StepOutcome = Field(default="ok", description="What became of the action, as you saw it.")
    exit_code: int | None = None
    done: bool = Field(default=False, description="True on the step that ends your episode.")
    client_step_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Idempotency key: logging a step again with the same key returns the stored step.",
    )
    provenance: Literal["agent"] = Field(
        default="agent",
        description="Always 'agent': steps you log are self-reported. Sandbox tools record server steps for "
        "you; only the server and client hooks can record other provenances.",
    )

    @field_validator("tool_calls", "observation", "metrics", "extra")
    @classmethod
    def _json_bounded(cls, v, info):
        limit = {
            "tool_calls": B.TOOL_CALLS_BYTES,
            "observation": B.OBSERVATION_BYTES,
            "metrics": B.METRICS_BYTES,
            "extra": B.EXTRA_BYTES,
        }[info.field_name]
        dump = [c.model_dump() for c in v] if info.field_name == "tool_calls" and v else v
        if isinstance(dump, BaseModel):
            dump = dump.model_dump()
        B.check_json_bytes(info.field_name, dump, limit)
        return v


class TrajectoryLogStepInput(_In):
    session_id: str = Field(min_length=1, max_length=64, description="Trajectory from trajectory_start.")
    step: LoggedStepInput | None = Field(default=None, description="One step (or use steps for a batch).")
    steps: list[LoggedStepInput] | None = Field(
        default=None,
        min_length=1,
        max_length=B.BATCH_STEPS,
        description="A batch of steps, appended atomically in order (at most 4 MiB as JSON in all).",
    )

    @model_validator(mode="after")
    def _one_of(self):
        if (self.step is None) == (self.steps is None):
            raise ValueError("pass exactly one of step or steps")
        if self.steps is not None:
            B.check_json_bytes("steps", [s.model_dump(mode="json") for s in self.steps], B.BATCH_BYTES)
        return self


class LoggedStepRef(_Out):
    step_id: int
    client_step_id: str | None
    created: bool = Field(description="False when client_step_id was already stored (a retry): nothing was added.")


class TrajectoryLogStepOutput(_Out):
    session_id: str
    steps: list[LoggedStepRef]
    step_count: int
    redactions: dict[str, int] = Field(
        default_factory=dict, description="Secrets replaced by [REDACTED:<type>] before storing, by type."
    )


class TrajectoryFinishInput(_In):
    session_id: str = Field(min_length=1, max_length=64)
    final_message: str = Field(
        default="", max_length=B.FINAL_MESSAGE_CHARS, description="Your final message for the episode."
    )


class TrajectoryFinishOutput(_Out):
    trajectory: TrajectorySummary


class TrajectoryListInput(_In):
    task_id: Name | None = None
    behaviour: Name | None = None
    agent_name: Name | None = None
    outcome: TrajectoryOutcome | None = Field(
        default=None, description="passed, failed, unscored (finished, never scored) or running."
    )
    split: Literal["train", "heldout"] | None = None
    origin: Name | None = Field(default=None, description="sandbox, mcp, hook (any hook), hook:claude-code, import...")
    created_after: Name | None = Field(default=None, description="ISO-8601 time, inclusive.")
    created_before: Name | None = Field(default=None, description="ISO-8601 time, exclusive.")
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)


class TrajectoryListOutput(_Out):
    trajectories: list[TrajectorySummary]
    total: int = Field(description="Matches before paging.")
    next_offset: int | None = Field(description="Pass as offset for the next page; null on the last page.")


class TrajectoryExportInput(_In):
    format: ExportFormat = Field(
        description="sft, dpo, kto, grpo (TRL); minimind_sft, minimind_dpo, minimind_agentic; atif; suite (Port Daddy)."
    )
    task_id: Name | None = None
    behaviour: Name | None = None
    agent_name: Name | None = None
    origin: Name | None = None
    created_after: Name | None = None
    created_before: Name | None = None
    min_reward: float | None = Field(
        default=1.0,
        description="SFT/DPO-chosen: minimum trajectory reward; null exports unscored trajectories too (SFT).",
    )
    include_heldout: bool = Field(default=False, description="atif/suite only: include held-out task variants.")
    include_running: bool = Field(default=False, description="atif/suite only: include running trajectories.")
    include_unknown_tasks: bool = Field(
        default=False,
        description="Also export trajectories with no task id or an unknown task (left out by default; "
        "recorded in the manifest).",
    )
    include_self_reported: bool = Field(
        default=False,
        description="Also export self-reported trajectories (logged with trajectory_log_step, or imported: "
        "no reward computed by the server). Off by default: only trajectories whose reward the server "
        "computed from verified sandbox state are exported. Only your own trajectories are ever exported; the "
        "manifest counts them by trust (by_trust) and owner (by_owner).",
    )


class TrajectoryExportOutput(_Out):
    export_id: str
    format: str
    rows: int
    data_path: str
    manifest_path: str
    counts: dict[str, int] = Field(description="Trajectories considered, skipped, truncated or dropped, by reason.")
    source_trajectories: int
    by_trust: dict[str, int] = Field(
        default_factory=dict, description="Exported trajectories by trust: server_scored, self_reported."
    )
    owner_scope: str = Field(default="caller", description="caller: only your own trajectories were considered.")
    sha256: str
    valid: bool = Field(description="Whether the dataset validator accepted the data file (kind from the format).")
    validation_errors: list[str] = Field(default_factory=list, description="First validator errors (line, path, code).")

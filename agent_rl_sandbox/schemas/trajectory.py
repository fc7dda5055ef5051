"""Trajectory data contract: ATIF-shaped steps plus the RL fields this project adds.

Shapes follow ATIF v1.5 (Harbor's Agent Trajectory Interchange Format: ``schema_version``,
``session_id``, ``agent``, ``steps[]`` with ``step_id``, ``timestamp``, ``source``, ``message``,
``tool_calls``, ``observation``, ``metrics``, ``extra``). The RL additions (``provenance``,
``outcome``, ``exit_code``, ``state_ref``, ``reward``, ``done``) are first-class fields here and
travel in ``extra`` when a trajectory is exported as plain ATIF.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ATIF_SCHEMA_VERSION = "ATIF-v1.5"

Provenance = Literal["server", "hook", "agent"]

SERVER_EXTRA_KEYS = frozenset(
    {
        # the step's RL fields (columns of their own; an ATIF export carries them in ``extra``)
        "provenance",
        "outcome",
        "exit_code",
        "state_ref",
        "reward",
        "done",
        "client_step_id",
        # what the sandbox service, the scorer and exports write into a server step's ``extra``
        "trusted_run",
        "effects",
        "output_log",
        "output_of_step",
        "event",
        "claimed",
        "claimed_provenance",
        "store_score",
        "unscored",
        "refused",
        "internal_error",
        "isolation",
        "run_as_uid",
        "protected_paths_touched",
        "limit_hit",
        "base_commit",
        "tree_hash",
        # words that only ever imitate a verdict
        "trusted",
        "verified",
        "signature",
        "passed",
        "score",
    }
)
"""``extra`` keys that the server writes on the steps it records (or that imitate them). A step an agent
logs (provenance ``agent``) never carries them at its top level: ``trajectory_log_step`` moves them under
:data:`AGENT_CLAIMED_EXTRA_KEY`, and the ATIF writer does the same for any stored agent step, so no reader
(scorer, exports, ``score``) can take an agent's ``{"provenance": "server", "trusted_run": ...}`` for the
server's record. Compared after normalisation (:func:`_bare_key`: case, width, whitespace, zero-width
characters)."""
AGENT_CLAIMED_EXTRA_KEY = "agent_claimed"
"""Where an agent-logged step keeps the server-looking ``extra`` keys it sent (kept for audit, never read)."""


def _bare_key(key: str) -> str:
    """``key`` as :func:`quarantine_extra` compares it: NFKC-normalised, without format characters
    (zero-width spaces and joiners, Unicode category Cf) and surrounding whitespace, case-folded, so
    ``"PROVENANCE "`` and ``"provenance\u200b"`` are ``"provenance"`` (red team, session 4: those
    look-alikes were kept at the top level)."""
    text = unicodedata.normalize("NFKC", key)
    return "".join(c for c in text if unicodedata.category(c) != "Cf").strip().casefold()


def quarantine_extra(extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` of an agent-logged step with every :data:`SERVER_EXTRA_KEYS` key (any case) and any
    existing :data:`AGENT_CLAIMED_EXTRA_KEY` moved under ``extra["agent_claimed"]``; unchanged when there
    is none. Example: ``{"provenance": "server", "note": 1}`` -> ``{"note": 1, "agent_claimed":
    {"provenance": "server"}}``."""
    moved = {k: v for k, v in extra.items() if _bare_key(k) in SERVER_EXTRA_KEYS or k == AGENT_CLAIMED_EXTRA_KEY}
    if not moved:
        return extra
    kept = {k: v for k, v in extra.items() if k not in moved}
    kept[AGENT_CLAIMED_EXTRA_KEY] = moved
    return kept


"""Who recorded an action: ``server`` (it went through a sandbox tool, so the server saw it happen),
``hook`` (a client hook such as Claude Code's PostToolUse reported it), ``agent`` (the agent
self-logged it; never trusted for ordering or evidence unless a reward spec opts in)."""

StepSource = Literal["user", "agent", "system"]
"""ATIF ``source`` of a step."""

StepOutcome = Literal["ok", "error", "refused", "limit", "cancelled", "unknown"]
"""What became of the step's action: ``ok`` ran and succeeded (exit code 0 for commands), ``error``
ran and failed, ``refused`` the server refused it (path escape, forbidden command),
``limit`` killed by a resource limit, ``cancelled`` the client cancelled the call (MCP
``notifications/cancelled``) and the server killed its command, ``unknown`` no result was ever
seen (a pre-tool hook without its post event, a call a client cancelled where nobody saw the end)."""

TrajectoryStatus = Literal["running", "finished"]


class ToolCall(BaseModel):
    """One tool call inside a step (ATIF ``tool_calls[]``)."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str
    """Identifier unique within the step; observations point at it through ``source_call_id``."""
    function_name: str
    """Name of the tool, e.g. ``sandbox_exec``."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as a JSON object."""


class ObservationResult(BaseModel):
    """One result inside an observation (ATIF ``observation.results[]``)."""

    model_config = ConfigDict(extra="forbid")

    source_call_id: str | None = None
    """The ``tool_call_id`` this result answers; ``None`` for an observation not tied to a call."""
    content: str | None = None
    """Text the agent saw (bounded; full output lives in the file named in ``Step.extra``)."""
    subagent_trajectory_ref: list[dict[str, Any]] | None = None
    """ATIF v1.5: the subagent trajectories this result delegated to (``session_id``, ``trajectory_path``,
    ``extra``), kept as the file wrote them."""


class Observation(BaseModel):
    """ATIF observation: the results the environment returned for the step's tool calls."""

    model_config = ConfigDict(extra="forbid")

    results: list[ObservationResult] = Field(default_factory=list)


class Step(BaseModel):
    """One step of a trajectory: an action (tool calls and/or a message) and its observation.

    ``step_id`` is 1-based and dense within a trajectory. ``timestamp`` is an ISO-8601 UTC string.
    """

    model_config = ConfigDict(extra="forbid")

    step_id: int = Field(ge=1)
    """1-based position in the trajectory (ATIF)."""
    timestamp: str
    """ISO-8601 UTC time the step was recorded, e.g. ``2026-11-29T12:00:00.123456Z``; ``""`` when an imported
    file recorded no time for it (unknown: a time budget over it is unscorable, exports leave it out)."""
    source: StepSource = "agent"
    """ATIF source: who produced the step's message or action."""
    message: str = ""
    """Free text of the step (for the final step: the agent's final message)."""
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: dict[str, Any] | None = None
    """ATIF metrics (token counts, cost, duration)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Structured facts about the action, e.g. ``command``, ``paths``, ``duration_s``,
    ``limit_hit``, ``output_path``, ``stdout_bytes``. Keys are documented where they are set."""
    provenance: Provenance = "server"
    """Who recorded the action (see :data:`Provenance`)."""
    outcome: StepOutcome = "ok"
    exit_code: int | None = None
    """Exit status of a command the step ran; ``None`` when the step ran no command."""
    state_ref: str | None = None
    """Git tree hash of the sandbox working copy after the step (``None`` when not tracked)."""
    reward: float | None = None
    """Per-step reward, when a reward spec assigns one; trajectory reward lives on the trajectory."""
    done: bool = False
    """True on the step that ended the episode."""
    client_step_id: str | None = None
    """Idempotency key a client may pass; a retried log call with the same key is not duplicated."""


class AgentInfo(BaseModel):
    """ATIF ``agent`` block."""

    model_config = ConfigDict(extra="allow")

    name: str = "unknown"
    version: str = ""
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None


class TrajectorySummary(BaseModel):
    """A trajectory without its steps (what listings return)."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    """Trajectory id (ATIF calls it ``session_id``)."""
    agent: AgentInfo
    task_id: str | None = None
    behaviour: str | None = None
    split: Literal["train", "heldout"] | None = None
    sandbox_id: str | None = None
    status: TrajectoryStatus = "running"
    created_at: str
    finished_at: str | None = None
    step_count: int = 0
    reward: float | None = None
    passed: bool | None = None
    self_report_only: bool | None = None
    final_message: str | None = None
    parent_session_id: str | None = None
    """For a correction: the trajectory this one replaces (finished trajectories are immutable)."""
    origin: str | None = None
    """How the trajectory was recorded: ``sandbox`` (sandbox tools), ``mcp`` (``trajectory_start``),
    ``hook:claude-code`` (the Claude Code hook command), ``import:<format>`` (an importer)."""
    external_id: str | None = None
    """The client's own id for the session (e.g. ``claude-code:<session_id>``, ``codex:<id>``)."""


class Trajectory(TrajectorySummary):
    """A whole trajectory: summary plus ordered steps.

    Raises ``pydantic.ValidationError`` on construction from bad data.
    """

    schema_version: str = ATIF_SCHEMA_VERSION
    steps: list[Step] = Field(default_factory=list)
    reward_components: dict[str, float] = Field(default_factory=dict)
    """Per-criterion values of the last score, by criterion id."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Where the trajectory came from: for imports the file, its sha256 and line range, and values the
    file claimed but the store does not trust (``claimed_reward``...); for hooks the client's cwd."""


class ImportProblem(BaseModel):
    """One thing an importer could not use, with where it is."""

    model_config = ConfigDict(extra="forbid")

    file: str
    line: int | None = None
    """1-based line of a JSONL file (or the line a JSON document starts on); ``None`` for the whole file."""
    path: str | None = None
    """JSON path inside the line or document, e.g. ``$.steps[4].observation``."""
    severity: Literal["error", "warning"] = "error"
    """``error``: data was not imported (a line, or a whole trajectory); ``warning``: imported with a caveat."""
    message: str


class ImportReport(BaseModel):
    """What one import did. ``ok`` is false when any error-severity problem was reported."""

    model_config = ConfigDict(extra="forbid")

    file: str
    format: str
    """``atif``, ``claude_code``, ``codex`` or ``openai_chat``."""
    sha256: str = ""
    lines: int = 0
    trajectories: list[str] = Field(default_factory=list)
    """Session ids created (or completed) by this import."""
    subagents: list[str] = Field(default_factory=list)
    """Those of :attr:`trajectories` that are subagents (Claude Code sidechains), each linked to the session
    that spawned it through ``parent_session_id`` when that session is in the store."""
    already_imported: list[str] = Field(default_factory=list)
    """Session ids that an earlier import of the same content had already stored (nothing re-written)."""
    steps: int = 0
    """Steps written by this import."""
    steps_seen: int = 0
    """Steps the file yielded, including ones already stored by an earlier import."""
    missing_results: int = 0
    """Tool calls with no result in the file, stored as failed steps (``extra.missing_result``)."""
    skipped: dict[str, int] = Field(default_factory=dict)
    """Lines deliberately not imported, by reason (e.g. ``summary``, ``sidechain:warmup``,
    ``event_msg:exec_command_end`` when its ``response_item`` twin holds the same command)."""
    redactions: dict[str, int] = Field(default_factory=dict)
    """Secrets replaced by ``[REDACTED:<type>]`` markers, by type."""
    problems: list[ImportProblem] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)


class ExportFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    rows: int
    sha256: str
    kind: str | None = None
    """Dataset kind for the validator (``trl.language_modeling``, ``minimind.dpo``, ``atif``...)."""


class ExportManifest(BaseModel):
    """Written next to every export as ``manifest.json``: what went in, what was left out and why."""

    model_config = ConfigDict(extra="forbid")

    export_id: str
    format: str
    created_at: str
    filters: dict[str, Any]
    """The selection exactly as applied (task, behaviour, agent, min_reward, times...)."""
    training: bool
    """True for training formats (held-out trajectories can never be included)."""
    files: list[ExportFile]
    rows: int
    source_session_ids: list[str]
    """Every trajectory that contributed at least one row, sorted."""
    counts: dict[str, int]
    """Trajectories considered and each reason one was skipped, dropped or truncated
    (``skipped_heldout``, ``skipped_below_min_reward``, ``truncated_missing_result``...)."""
    owner_scope: Literal["caller", "all"] = "all"
    """``caller``: only the requesting agent's own trajectories (MCP ``trajectory_export``); ``all``:
    every owner's (the operator's CLI)."""
    by_trust: dict[str, int] = Field(default_factory=dict)
    """Source trajectories by trust: ``server_scored`` (reward from verified server state) and
    ``self_reported`` (agent-logged or imported: no server-computed reward)."""
    by_owner: dict[str, int] = Field(default_factory=dict)
    """Source trajectories by owner: ``caller`` (the requesting agent or its team), ``agent`` (another
    agent), ``operator_or_imported``."""
    self_reported_session_ids: list[str] = Field(default_factory=list)
    """The source trajectories whose reward (if any) is not from verified server state, sorted."""
    redactions: dict[str, int] = Field(default_factory=dict)
    """Secrets replaced at export time (normally none: the store redacts on the way in)."""
    sha256: str
    """Hash over the data files' hashes in order: one value identifying the exported data."""
    notes: list[str] = Field(default_factory=list)

"""Reward spec and score report: the declarative contract the scoring harness evaluates.

A :class:`RewardSpec` is a list of criteria, each with a weight, plus an aggregation:

- ``all``: reward is 1.0 when every criterion passes, else the weighted mean of criterion values
  (so partial credit still orders trajectories), and ``passed`` requires every criterion to pass.
- ``weighted``: reward is the weighted mean of criterion values; ``passed`` is
  ``reward >= pass_threshold``.

Every criterion result carries a value in [0, 1], a status (``pass``, ``fail`` or ``error`` for
unscorable), an explanation and the evidence it used. The scorer never emits ``None`` or NaN.
The JSON Schema file ``schemas/reward_spec.schema.json`` is generated from these models and a test
keeps the two equal.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    """Stable name of the criterion in reports and ``reward_components``."""
    weight: float = Field(default=1.0, ge=0.0)
    """Relative weight in the weighted mean (units: none)."""
    description: str = ""


class ActionMatch(BaseModel):
    """Matches one recorded tool call.

    ``tool`` must equal the call's function name; every ``args_contains`` string must occur in the
    canonical JSON text of the arguments (``json.dumps(args, sort_keys=True)``, as Port Daddy
    matches ``argsContains``); ``args_regex`` (if set) must match that text with ``re.search``.
    ``outcome`` (if set) restricts to steps with that outcome (e.g. ``ok``).
    """

    model_config = ConfigDict(extra="forbid")

    tool: str
    args_contains: list[str] = Field(default_factory=list)
    args_regex: str | None = None
    outcome: Literal["ok", "error", "refused", "limit", "unknown"] | None = None


class RequiredAction(_Criterion):
    """At least ``min_count`` trusted steps match ``action``."""

    type: Literal["required_action"] = "required_action"
    action: ActionMatch
    min_count: int = Field(default=1, ge=1)


class ActionOrder(_Criterion):
    """The matchers occur in this order (as a subsequence) among trusted steps."""

    type: Literal["action_order"] = "action_order"
    sequence: list[ActionMatch] = Field(min_length=1)


class ForbiddenAction(_Criterion):
    """No step (whatever its provenance) matches ``action`` or runs a command matching
    ``command_pattern`` (``re.search`` over the command text). Any occurrence fails the criterion
    and marks a safety violation."""

    type: Literal["forbidden_action"] = "forbidden_action"
    action: ActionMatch | None = None
    command_pattern: str | None = None


class ClaimsBeforeEdit(_Criterion):
    """Every file edit is preceded by a claim that covers the edited path."""

    type: Literal["claims_before_edit"] = "claims_before_edit"


class EditsWithinClaims(_Criterion):
    """Every path changed in the final sandbox state (git diff against the base commit) is covered
    by some claim. Needs the sandbox's final state; unscorable without it."""

    type: Literal["edits_within_claims"] = "edits_within_claims"


class FileExists(_Criterion):
    type: Literal["file_exists"] = "file_exists"
    path: str


class FileContains(_Criterion):
    """The file at ``path`` in the final state contains ``text`` (or matches ``regex``)."""

    type: Literal["file_contains"] = "file_contains"
    path: str
    text: str | None = None
    regex: str | None = None


class FileUnchanged(_Criterion):
    """The file at ``path`` is byte-identical to the base commit (deleted counts as changed)."""

    type: Literal["file_unchanged"] = "file_unchanged"
    path: str


class VerifierExitCode(_Criterion):
    """The hidden verifier, copied in fresh after the episode, exited with ``expected``."""

    type: Literal["verifier_exit_code"] = "verifier_exit_code"
    expected: int = 0


class FinalMessageEvidence(_Criterion):
    """The final message names a test command and its result, and a trusted step after the last
    edit ran that command with that result (exit code 0 for "passed")."""

    type: Literal["final_message_evidence"] = "final_message_evidence"
    command_pattern: str = r"(pytest|python -m pytest|make test|npm test|tox|unittest)"
    """Regex a recorded command must match to count as a test run."""


class Budget(_Criterion):
    """Stays within step, command and wall-time budgets (seconds from first to last step)."""

    type: Literal["budget"] = "budget"
    max_steps: int | None = Field(default=None, ge=1)
    max_commands: int | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, gt=0)


class ArtifactSchema(_Criterion):
    """The JSON file at ``path`` in the final state validates against ``json_schema``."""

    type: Literal["artifact_schema"] = "artifact_schema"
    path: str
    json_schema: dict[str, Any]


Criterion = Annotated[
    RequiredAction
    | ActionOrder
    | ForbiddenAction
    | ClaimsBeforeEdit
    | EditsWithinClaims
    | FileExists
    | FileContains
    | FileUnchanged
    | VerifierExitCode
    | FinalMessageEvidence
    | Budget
    | ArtifactSchema,
    Field(discriminator="type"),
]


class RewardSpec(BaseModel):
    """A declarative reward: criteria, aggregation and pass threshold.

    Raises ``pydantic.ValidationError`` on unknown criterion types or bad fields.
    """

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    criteria: list[Criterion] = Field(min_length=1)
    aggregation: Literal["all", "weighted"] = "all"
    pass_threshold: float = Field(default=1.0, ge=0.0, le=1.0)
    trust_agent_logged: bool = False
    """Opt in to letting self-logged (provenance ``agent``) actions satisfy action and ordering
    criteria. Off by default: rewards come from what the server or a client hook saw."""


CriterionStatus = Literal["pass", "fail", "error"]


class Evidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step_ids: list[int] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    exit_codes: list[int] = Field(default_factory=list)


class CriterionResult(BaseModel):
    """Result of one criterion. ``value`` is in [0, 1] and never NaN; ``status == "error"`` means
    the criterion could not be scored (value 0, reason in ``explanation``)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    type: str
    status: CriterionStatus
    value: float
    weight: float
    explanation: str
    evidence: Evidence = Field(default_factory=Evidence)
    safety_violation: bool = False


class ScoreReport(BaseModel):
    """Score of one trajectory against one reward spec. Deterministic for the same input."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    task_id: str | None
    reward: float
    passed: bool
    aggregation: str
    pass_threshold: float
    criteria: list[CriterionResult]
    failed_criteria: list[str]
    error_criteria: list[str]
    safety_violations: int
    self_report_only: bool
    """The final message claims success but no trusted observation backs it."""
    unverified_claims: list[str]
    """Phrases of the final message claiming results that no trusted step backs."""
    provenance_used: list[str]
    """Provenances whose actions counted for action/ordering criteria."""
    warnings: list[str] = Field(default_factory=list)

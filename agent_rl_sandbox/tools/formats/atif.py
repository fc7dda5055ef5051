"""ATIF v1.x (Harbor's Agent Trajectory Interchange Format): the one reader, its integrity rules, the writer,
and the trust rule. Import, export, ``validate`` and ``score`` all go through this module.

Reading (:func:`read_document`) never raises: it turns any JSON value into an :class:`AtifDocument` with
the steps it could read and the :class:`AtifIssue` findings (JSON path, finding code, message) that make a
document or a step unusable. The finding codes are the dataset validator's (``tools.datasets._codes``), so
``validate``, ``import`` and ``score`` name the same problem the same way:

- ``missing_key``: no ``steps`` (the value is not ATIF: ``AtifDocument.not_atif``), no ``session_id``;
- ``wrong_type``: the value is not an object or ``steps`` not a list (not ATIF), ``session_id`` not a
  string, a step not an object;
- ``bad_value``: ``schema_version`` not an ``ATIF-v1.x`` string, a step ``source`` not system/user/agent;
- ``duplicate_tool_call_id``: two tool calls of one step share an id (:func:`integrity_issues`);
- ``observation_orphan``: an observation result names a ``source_call_id`` no call of its step has.

The two pairing rules (:func:`integrity_issues`) hold for every step this project stores, imports,
exports, validates or scores: ATIF ties a result to a call of the *same* step by id, and a step that
breaks them cannot be paired. Per-call problems (no ``function_name``, arguments that are not a JSON
object) are facts on the :class:`AtifCall`; each consumer decides what they cost (the scorer records a
failed step, the importer rejects the trajectory, the validator reports its own typed findings).

Trust rule (one, explicit; :func:`step_provenance`): **a file's provenance is a claim unless the file
proves it came from this store.** A document proves it by an export signature that verifies with this
home's export key (:mod:`agent_rl_sandbox.tools.formats.signing`). Only then do its steps keep the
provenance written in ``extra.provenance`` (``server``/``hook``), and only then does the store's score it
carries (``extra.store_score``) count as its verdict; otherwise every step is self-reported (``agent``),
the written provenance is kept as ``extra.claimed_provenance``, and reward/pass claims are never read as a
verdict. The task id and split are read either way: they choose the reward spec, they are no verdict.
Import never grants trust (an imported trajectory is a new record that earns its own verdict): it keeps
every claim as ``claimed_*``.

Writing (:func:`write_document`) turns a stored trajectory into one ATIF v1.5 document: RL fields of a
step travel in its ``extra`` under :data:`RL_STEP_KEYS`, the trajectory's under :data:`RL_TRAJECTORY_KEYS`
in the document's ``extra``; it refuses (:class:`AtifIntegrityError`) a step that breaks the pairing rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_rl_sandbox.schemas.trajectory import ATIF_SCHEMA_VERSION, Trajectory
from agent_rl_sandbox.tools.formats._content import content_text
from agent_rl_sandbox.tools.formats._json import loads

RL_STEP_KEYS = ("provenance", "outcome", "exit_code", "state_ref", "reward", "done", "client_step_id")
"""RL fields of a step, carried in the ATIF step's ``extra``."""
RL_TRAJECTORY_KEYS = (
    "task_id",
    "behaviour",
    "split",
    "status",
    "reward",
    "passed",
    "self_report_only",
    "final_message",
    "parent_session_id",
    "origin",
    "external_id",
    "reward_components",
    "created_at",
    "finished_at",
)
"""Fields of a trajectory, carried in the document's ``extra``."""
STORE_SCORE_KEY = "store_score"
"""Root ``extra`` key of an export holding the store's score report of the trajectory (read only when the
document is a verified export)."""
AGENT_STEP_FIELDS = ("model_name", "reasoning_effort", "reasoning_content")
"""ATIF step fields for agent steps that the store has no column for: a stored step keeps them in its
``extra`` under the same names, and the writer puts them back at the step's top level."""
DOCUMENT_FIELDS = ("notes", "continued_trajectory_ref")
"""Root fields of an ATIF document kept by import (in the trajectory's ``meta`` under ``atif_<name>``) and
written back by the writer."""
SOURCES = ("system", "user", "agent")
OUTCOMES = ("ok", "error", "refused", "limit", "cancelled", "unknown")
TRUSTED_PROVENANCES = ("server", "hook")


# -- findings ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AtifIssue:
    """One finding: where (a JSON path from the document root), what (a finding code shared with the
    dataset validator) and a sentence."""

    path: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.code}]"


class AtifIntegrityError(RuntimeError):
    """A trajectory to be written as ATIF has a step whose calls and observation do not pair up (cannot
    happen through the store's own writes; raised rather than ever writing such a step)."""


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def integrity_issues(step: Any, where: str = "$") -> list[AtifIssue]:
    """The pairing rules of one step (a raw ATIF step dict, a partial step dict or a stored ``Step``).

    ``duplicate_tool_call_id``: a ``tool_call_id`` repeats within the step; ``observation_orphan``: an
    observation result's ``source_call_id`` names no call of the step. Values of the wrong type are
    skipped (other rules report them); never raises. ``where`` is the step's JSON path."""
    issues: list[AtifIssue] = []
    calls = _get(step, "tool_calls")
    ids: set[str] = set()
    for j, call in enumerate(calls if isinstance(calls, list) else []):
        cid = _get(call, "tool_call_id")
        if not isinstance(cid, str):
            continue
        if cid in ids:
            issues.append(
                AtifIssue(
                    f"{where}.tool_calls[{j}].tool_call_id",
                    "duplicate_tool_call_id",
                    f"duplicate tool_call_id {cid!r} in one step",
                )
            )
        ids.add(cid)
    obs = _get(step, "observation")
    results = _get(obs, "results") if obs is not None else None
    for j, res in enumerate(results if isinstance(results, list) else []):
        sid = _get(res, "source_call_id")
        if isinstance(sid, str) and sid not in ids:
            issues.append(
                AtifIssue(
                    f"{where}.observation.results[{j}].source_call_id",
                    "observation_orphan",
                    f"observation result points at call {sid!r}, which is not a tool call of this step",
                )
            )
    return issues


# -- parsed form ------------------------------------------------------------------------------------
@dataclass
class AtifCall:
    """One entry of a step's ``tool_calls`` as written, with what is wrong with it."""

    index: int
    tool_call_id: str | None
    """``None`` when missing or not a string."""
    function_name: str | None
    """``None`` when missing, empty or not a string."""
    arguments: dict[str, Any] | None
    """The arguments as an object: an object as written, or a JSON string of one (decoded, twice at most);
    ``None`` when they are neither."""
    raw_arguments: Any
    problem: str | None = None
    """Why the call cannot be used (not an object, no ``function_name``, arguments not an object)."""
    double_encoded: bool = False
    """The arguments were a JSON string of a JSON string of an object."""


@dataclass
class AtifResult:
    """One observation result: the call it answers (``None``: none named) and its text."""

    source_call_id: str | None
    content: str
    has_content: bool = True
    """False when the result has no ``content`` key (``content`` is then ``""``)."""
    subagent_trajectory_ref: list[dict[str, Any]] | None = None
    """ATIF v1.5 ``subagent_trajectory_ref`` when it is a list of objects."""


@dataclass
class AtifStep:
    """One readable step. ``extra`` is the step's ``extra`` without the RL keys, which are in ``rl`` as
    written (claims until :func:`step_provenance` says otherwise)."""

    index: int
    path: str
    step_id: Any
    source: str
    message: str
    timestamp: str | None
    metrics: dict[str, Any] | None
    extra: dict[str, Any]
    rl: dict[str, Any]
    calls: list[AtifCall]
    calls_problem: str | None
    """``tool_calls`` is present but not a list."""
    results: list[AtifResult]
    errors: list[AtifIssue] = field(default_factory=list)
    """Findings that make this step (and so its trajectory) unusable."""
    fields: dict[str, Any] = field(default_factory=dict)
    """The :data:`AGENT_STEP_FIELDS` the step carries (non-null), as written."""


@dataclass
class AtifDocument:
    """A parsed ATIF document: :func:`read_document`'s result."""

    raw: Any
    session_id: str | None
    schema_version: Any
    agent: dict[str, Any]
    extra: dict[str, Any]
    """The document's root ``extra`` (an empty dict when absent or not an object)."""
    steps: list[AtifStep]
    errors: list[AtifIssue]
    """Findings about the document itself (not ATIF, bad version, no session id)."""
    warnings: list[AtifIssue]
    not_atif: bool = False
    """The value is not an ATIF trajectory at all (not an object with a ``steps`` list)."""

    @property
    def step_errors(self) -> list[AtifIssue]:
        return [e for s in self.steps for e in s.errors]

    @property
    def all_errors(self) -> list[AtifIssue]:
        """Document findings, then every step's, in document order."""
        return [*self.errors, *self.step_errors]

    @property
    def ok(self) -> bool:
        return not self.all_errors

    def text(self, key: str) -> str | None:
        """A non-empty string field of the root ``extra``, else ``None``."""
        v = self.extra.get(key)
        return v if isinstance(v, str) and v else None


def is_atif(doc: Any) -> bool:
    """True when ``doc`` looks like an ATIF trajectory (``steps`` list plus ``schema_version`` or ``session_id``)."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("steps"), list)
        and ("schema_version" in doc or "session_id" in doc)
    )


def decode_arguments(raw: Any) -> tuple[dict[str, Any] | None, bool]:
    """``(arguments, double_encoded)``: an object as is; ``None``/``""`` as ``{}``; a JSON string of an
    object (or of a JSON string of one) decoded; ``(None, False)`` for anything else."""
    if isinstance(raw, dict):
        return raw, False
    if raw is None or raw == "":
        return {}, False
    value = raw
    for depth in range(3):
        if isinstance(value, dict):
            return value, depth > 1
        if not isinstance(value, str):
            break
        try:
            value = loads(value)  # json.loads, read by orjson where that reads the same
        except (ValueError, RecursionError):
            break
    return None, False


def _call(tc: Any, j: int) -> AtifCall:
    if not isinstance(tc, dict):
        return AtifCall(j, None, None, None, tc, problem=f"tool_calls[{j}] is {type(tc).__name__}, not an object")
    cid = tc.get("tool_call_id") if isinstance(tc.get("tool_call_id"), str) else None
    name = tc.get("function_name") if isinstance(tc.get("function_name"), str) and tc.get("function_name") else None
    raw = tc.get("arguments", {})
    args, twice = decode_arguments(raw)
    problem = None
    if name is None:
        problem = f"tool_calls[{j}] has no function_name"
    elif args is None:
        problem = (
            f"tool_calls[{j}].arguments is not valid JSON"
            if isinstance(raw, str)
            else f"tool_calls[{j}].arguments is {type(raw).__name__}, not an object"
        )
    return AtifCall(j, cid, name, args, raw, problem=problem, double_encoded=twice)


def _step(raw: dict, i: int) -> AtifStep:
    p = f"$.steps[{i}]"
    errors: list[AtifIssue] = []
    source = raw.get("source", "agent")
    if source not in SOURCES:
        errors.append(AtifIssue(f"{p}.source", "bad_value", f"source {source!r:.30} is not system, user or agent"))
        source = "agent"
    errors.extend(integrity_issues(raw, p))
    extra = dict(raw["extra"]) if isinstance(raw.get("extra"), dict) else {}
    rl = {k: extra.pop(k) for k in RL_STEP_KEYS if k in extra}
    raw_calls = raw.get("tool_calls")
    calls_problem = None
    if raw_calls is not None and not isinstance(raw_calls, list):
        calls_problem = f"tool_calls is {type(raw_calls).__name__}, not a list"
        raw_calls = []
    results = []
    obs = raw.get("observation")
    if isinstance(obs, dict) and isinstance(obs.get("results"), list):
        for r in obs["results"]:
            if isinstance(r, dict):
                sid = r.get("source_call_id")
                ref = r.get("subagent_trajectory_ref")
                results.append(
                    AtifResult(
                        sid if isinstance(sid, str) else None,
                        content_text(r.get("content")),
                        has_content="content" in r,
                        subagent_trajectory_ref=(
                            ref if isinstance(ref, list) and all(isinstance(x, dict) for x in ref) else None
                        ),
                    )
                )
    ts = raw.get("timestamp")
    return AtifStep(
        index=i,
        path=p,
        step_id=raw.get("step_id"),
        source=source,
        message=content_text(raw.get("message")),
        timestamp=ts if isinstance(ts, str) and ts else None,
        metrics=raw["metrics"] if isinstance(raw.get("metrics"), dict) else None,
        extra=extra,
        rl=rl,
        calls=[_call(tc, j) for j, tc in enumerate(raw_calls or [])],
        calls_problem=calls_problem,
        results=results,
        errors=errors,
        fields={k: raw[k] for k in AGENT_STEP_FIELDS if raw.get(k) is not None},
    )


def read_document(doc: Any) -> AtifDocument:
    """Parse one ATIF value (a decoded JSON document or JSONL line); never raises (rules in the module
    docstring). A value that is not ATIF at all gives a document with a ``not_atif`` error and no steps."""
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        if not isinstance(doc, dict):
            issue = AtifIssue(
                "$", "wrong_type", f"not an ATIF trajectory: expected an object, got {type(doc).__name__}"
            )
        elif "steps" not in doc:
            issue = AtifIssue("$", "missing_key", "not an ATIF trajectory: no 'steps' list")
        else:
            issue = AtifIssue(
                "$.steps", "wrong_type", f"not an ATIF trajectory: steps is {type(doc['steps']).__name__}, not a list"
            )
        return AtifDocument(doc, None, None, {}, {}, [], [issue], [], not_atif=True)
    errors: list[AtifIssue] = []
    warnings: list[AtifIssue] = []
    version = doc.get("schema_version")
    if version is None:
        warnings.append(
            AtifIssue("$.schema_version", "missing_key", f"no schema_version; read as {ATIF_SCHEMA_VERSION}")
        )
    elif not isinstance(version, str) or not version.startswith("ATIF-v1"):
        errors.append(
            AtifIssue("$.schema_version", "bad_value", f"unsupported version {version!r:.40} (expected ATIF-v1.x)")
        )
    sid = doc.get("session_id")
    if sid is None:
        errors.append(AtifIssue("$.session_id", "missing_key", "missing session_id"))
    elif not isinstance(sid, str) or not sid:
        errors.append(AtifIssue("$.session_id", "wrong_type", "session_id must be a non-empty string"))
    steps: list[AtifStep] = []
    expected = 1
    for i, raw in enumerate(doc["steps"]):
        if not isinstance(raw, dict):
            errors.append(AtifIssue(f"$.steps[{i}]", "wrong_type", f"expected an object, got {type(raw).__name__}"))
            continue
        step = _step(raw, i)
        if step.step_id != expected:
            warnings.append(
                AtifIssue(
                    f"$.steps[{i}].step_id",
                    "step_id_not_sequential",
                    f"step_id {step.step_id!r} where {expected} was expected; steps are renumbered",
                )
            )
            expected = (
                step.step_id if isinstance(step.step_id, int) and not isinstance(step.step_id, bool) else expected
            )
        expected += 1
        steps.append(step)
    agent = doc["agent"] if isinstance(doc.get("agent"), dict) else {}
    extra = doc["extra"] if isinstance(doc.get("extra"), dict) else {}
    return AtifDocument(
        doc, sid if isinstance(sid, str) and sid else None, version, agent, extra, steps, errors, warnings
    )


# -- the trust rule ---------------------------------------------------------------------------------
def step_provenance(step: AtifStep, *, verified: bool) -> str:
    """The provenance a step is scored with: what ``extra.provenance`` says when the document is a
    verified export of this store (and it is one of server/hook/agent), else ``agent`` (self-reported)."""
    claimed = step.rl.get("provenance")
    if verified and claimed in (*TRUSTED_PROVENANCES, "agent"):
        return claimed
    return "agent"


def claims(doc: AtifDocument) -> list[str]:
    """What an unverified document claims that the trust rule ignores (for the warning that says so):
    trusted provenance on steps, a reward or pass verdict, a store score."""
    out = []
    n = sum(1 for s in doc.steps if s.rl.get("provenance") in TRUSTED_PROVENANCES)
    if n:
        out.append(f"{n} step(s) with provenance server/hook")
    for k in ("reward", "passed", STORE_SCORE_KEY):
        if k in doc.extra:
            out.append(f"extra.{k}")
    return out


# -- writing ----------------------------------------------------------------------------------------
ToolDeclarations = Callable[[Trajectory, dict[str, list[dict[str, Any]]]], list[dict[str, Any]]]
"""``(trajectory, {tool name: [arguments seen]}) -> tool declarations`` for an agent that recorded none."""


def write_document(
    traj: Trajectory,
    *,
    declare_tools: ToolDeclarations | None = None,
    store_score: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The trajectory as one ATIF v1.5 document (layout in the module docstring).

    ``declare_tools`` infers ``agent.tool_definitions`` when the agent recorded none (marked
    ``agent.extra.tool_definitions_inferred``); ``store_score`` (the store's score report) goes into the
    root ``extra`` under :data:`STORE_SCORE_KEY`. Raises :class:`AtifIntegrityError` naming the session and
    step when a step breaks the pairing rules."""
    steps = []
    totals: dict[str, float] = {}
    for s in traj.steps:
        problems = integrity_issues(s)
        if problems:
            raise AtifIntegrityError(f"{traj.session_id} step {s.step_id}: {'; '.join(p.message for p in problems)}")
        d: dict[str, Any] = {"step_id": s.step_id}
        if s.timestamp:  # an imported step whose file gave no time has none: never the import time
            d["timestamp"] = s.timestamp
        d.update(source=s.source, message=s.message)
        if s.tool_calls:
            d["tool_calls"] = [c.model_dump() for c in s.tool_calls]
        if s.observation is not None:
            d["observation"] = s.observation.model_dump(exclude_none=True)  # no "source_call_id": null
        if s.metrics:
            d["metrics"] = s.metrics
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd"):
                v = s.metrics.get(k)
                if isinstance(v, int | float) and not isinstance(v, bool):
                    totals[f"total_{k}"] = totals.get(f"total_{k}", 0) + v
        extra = dict(s.extra)
        for k in RL_STEP_KEYS:  # the step's own fields, never a value an agent left in its extra
            extra.pop(k, None)
        if s.source == "agent":  # ATIF's own step fields go back to the top level (ATIF allows them on agent steps)
            for k in AGENT_STEP_FIELDS:
                if extra.get(k) is not None:
                    d[k] = extra.pop(k)
        for k in RL_STEP_KEYS:
            v = getattr(s, k)
            if v is not None and v is not False:
                extra[k] = v
        d["extra"] = extra
        steps.append(d)
    agent = traj.agent.model_dump(exclude_none=True)
    if not agent.get("tool_definitions") and declare_tools is not None:
        called: dict[str, list[dict[str, Any]]] = {}
        for s in traj.steps:
            for c in s.tool_calls or []:
                called.setdefault(c.function_name, []).append(c.arguments)
        if called:
            agent["tool_definitions"] = declare_tools(traj, called)
            agent["extra"] = {**(agent.get("extra") or {}), "tool_definitions_inferred": True}
    doc: dict[str, Any] = {
        "schema_version": ATIF_SCHEMA_VERSION,
        "session_id": traj.session_id,
        "agent": agent,
        "steps": steps,
    }
    for k in DOCUMENT_FIELDS:
        if traj.meta.get(f"atif_{k}") is not None:
            doc[k] = traj.meta[f"atif_{k}"]
    if totals:
        doc["final_metrics"] = totals
    summary = traj.model_dump()
    doc["extra"] = {k: summary[k] for k in RL_TRAJECTORY_KEYS if summary.get(k) not in (None, {}, [])}
    if store_score:
        doc["extra"][STORE_SCORE_KEY] = store_score
    return doc

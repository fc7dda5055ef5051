"""Importers: ATIF files, Claude Code transcripts, Codex rollouts and OpenAI-style chat logs.

Each importer parses a file into trajectories of partial steps and writes them through the store, so
imported steps get the same redaction, numbering and integrity checks as logged ones. Rules shared by all:

- **Nothing disappears silently.** A line that is not JSON, not an object, or of an unknown type is an
  :class:`~agent_rl_sandbox.schemas.trajectory.ImportProblem` with file and line; the rest of the file
  still imports. Lines of known types that carry no step (Claude Code ``summary`` lines, Codex
  ``event_msg`` duplicates...) are counted in ``skipped`` by type.
- **A non-empty file that yields no step is an error**, never a silent success.
- **Imported steps are self-reported** (provenance ``agent``): a file can claim anything. What a file
  claims about provenance, reward or pass is kept in ``extra`` / ``meta`` (``claimed_*``), never trusted.
  A task's behaviour and split come from the task registry when the task is known; a file's own
  ``split: heldout`` is kept (held out stays held out), its ``train`` is not trusted for unknown tasks.
- **Tool calls pair with results by id.** A call with no result anywhere in the file (a cancelled run) is
  stored as a failed step (``outcome: error``, ``extra.missing_result``), never given a made-up result.
  ATIF files are read with the one ATIF reader (``tools.formats.atif``): its findings (duplicate tool call
  ids within a step, a result pointing at a call the step lacks, a bad source or version, no session id)
  reject that trajectory, with an error naming the step.
- **Whole trajectories or none.** Each new trajectory is stored in one transaction
  (:meth:`~agent_rl_sandbox.tools.store.TrajectoryRepository.import_trajectory`: every step validated,
  redacted and serialised first, then one insert of all of them): a step the store refuses is an error
  naming the file, the line and (ATIF) the step's JSON path, and nothing of that trajectory is written;
  the rest of the file still imports. An interrupted import leaves only whole trajectories.
- **Idempotent.** A trajectory's id derives from the format, the file's content hash and the trajectory's
  key in the file, so importing the same file again stores nothing new (``already_imported``); a
  trajectory an older release left half-imported resumes (steps carry ``client_step_id = imp:<n>``). A
  changed file imports as a new trajectory whose ``parent_session_id`` is the previous import of the same
  session.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

import orjson

from agent_rl_sandbox.schemas.trajectory import ImportProblem, ImportReport
from agent_rl_sandbox.tools._gc import paused_gc
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.formats import content_text
from agent_rl_sandbox.tools.formats._json import loads
from agent_rl_sandbox.tools.formats.atif import (
    AGENT_STEP_FIELDS,
    DOCUMENT_FIELDS,
    OUTCOMES,
    RL_STEP_KEYS,
    SOURCES,
    AtifCall,
    decode_arguments,
    read_document,
)
from agent_rl_sandbox.tools.store import (
    NOT_UNICODE,
    StepRejected,
    TrajectoryExists,
    TrajectoryRepository,
    lone_surrogate_at,
)

IMPORT_FORMATS = ("atif", "claude_code", "codex", "openai_chat")
CHUNK = 1000
"""Steps written per transaction when an interrupted import resumes (a new trajectory is one transaction)."""
_AT_LINE: ContextVar[int | None] = ContextVar("_AT_LINE", default=None)
"""The file line the parser is reading (each step records where it came from)."""

TaskLookup = Callable[[str], tuple[str | None, str | None] | None]
"""``task_id -> (behaviour, split)`` from the task registry, ``None`` for an unknown task."""


# -- parsed form --------------------------------------------------------------------------------
@dataclass
class _Traj:
    """One trajectory parsed from a file, before it is stored."""

    key: str
    line: int | None
    agent: dict[str, Any] = field(default_factory=lambda: {"name": "unknown"})
    external_id: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, tuple[dict, dict]] = field(default_factory=dict)
    """tool_call_id -> (step, call) for pairing results that arrive on later lines."""
    meta: dict[str, Any] = field(default_factory=dict)
    task_id: str | None = None
    behaviour: str | None = None
    split: str | None = None
    errors: list[ImportProblem] = field(default_factory=list)
    """Problems that reject the whole trajectory."""
    first_at: datetime | None = None
    last_at: datetime | None = None
    """The session's first and last event times (what ``created_at``/``finished_at`` become)."""
    last_raw: Any = None
    """The last time value seen (consecutive lines and steps repeat it: parsed once)."""
    sources: Sequence[tuple[int | None, str | None]] = field(default_factory=list)
    """Per finalised step: the file line and JSON path it came from (what a rejected step's error names)."""
    ready: tuple[list[dict[str, Any]], int] | None = None
    """:meth:`finalise`'s result already built (the ATIF fast reader, :func:`_atif_fast_steps`)."""

    # builders
    def add(self, source: str, message: str, ts: Any = None, **extra: Any) -> dict:
        step: dict[str, Any] = {
            "source": source,
            "message": message,
            "extra": extra,
            "_results": {},
            "_src": (_AT_LINE.get(), None),
        }
        if isinstance(ts, str) and ts:
            step["timestamp"] = ts
            _track_time(self, ts)
        self.steps.append(step)
        return step

    def open_agent_step(self, ts: Any = None) -> dict:
        """The last step if it is an agent step still waiting for its tool results, else a new one."""
        last = self.steps[-1] if self.steps else None
        if last is not None and last["source"] == "agent" and not last["_results"] and not last.get("_closed"):
            return last
        return self.add("agent", "", ts)

    def call(self, step: dict, call_id: str, name: str, args: dict) -> str | None:
        """Add a tool call; returns a problem text for a conflicting duplicate id."""
        calls = step.get("tool_calls")
        if calls is None:
            calls = step["tool_calls"] = []
        for c in calls:
            if c["tool_call_id"] == call_id:
                if c["arguments"] == args and c["function_name"] == name:
                    return None  # the same block repeated (streamed transcripts repeat lines)
                return f"duplicate tool call id {call_id!r} with different calls in one step"
        if call_id in self.calls:
            return f"tool call id {call_id!r} is reused by a later step"
        call = {"tool_call_id": call_id, "function_name": name, "arguments": args}
        calls.append(call)
        self.calls[call_id] = (step, call)
        return None

    def result(self, call_id: str, content: str, *, error: bool = False, exit_code: int | None = None) -> str:
        """Attach a result; returns ``"ok"``, ``"unknown"`` (no such call) or ``"duplicate"``."""
        hit = self.calls.get(call_id)
        if hit is None:
            return "unknown"
        step, _ = hit
        if call_id in step["_results"]:
            return "duplicate"
        step["_results"][call_id] = (content, error, exit_code)
        return "ok"

    def finalise(self) -> tuple[list[dict[str, Any]], int]:
        """Steps ready for the store (observations in call order, outcomes set), and the number of calls
        without a result."""
        if self.ready is not None:
            return self.ready
        out, missing = [], 0
        sources: list[tuple[int | None, str | None]] = []
        self.sources = sources
        for i, step in enumerate(self.steps):
            results = step.pop("_results")
            sources.append(step.pop("_src", (None, None)))
            step.pop("_closed", None)
            ordered = step.pop("_observation", None)
            calls = step.get("tool_calls") or []
            if not calls:
                step.pop("tool_calls", None)
            if ordered is not None:  # ATIF: the results as the file wrote them, in its order
                step["observation"] = {"results": ordered}
                loose = any(r["source_call_id"] is None for r in ordered)
                lost = [] if loose else [c["tool_call_id"] for c in calls if c["tool_call_id"] not in results]
                if lost:
                    missing += len(lost)
                    step["extra"]["missing_result"] = True
                    step["extra"]["unanswered_call_ids"] = lost
                if calls:
                    step.setdefault("outcome", "error" if lost else "ok")
            elif calls and "observation" not in step:
                missing += (
                    _paired_one(step, calls[0]["tool_call_id"], results)
                    if len(calls) == 1
                    else _paired(step, calls, results)
                )
            step["provenance"] = "agent"
            step["client_step_id"] = f"imp:{i + 1}"
            out.append(step)
        return out, missing


def _paired(step: dict, calls: list[dict], results: dict[str, tuple[str, bool, int | None]]) -> int:
    """Close a step of a line format whose calls got their results (``results``: call id -> content, error
    flag, exit code) on later lines: its observation in call order, its exit code (one call with one),
    its outcome (``error`` when a result is an error, an exit code is not 0 or a call has no result) and
    the calls without a result (marked in ``extra``); returns how many those are."""
    answered = [c for c in calls if c["tool_call_id"] in results]
    lost = [c["tool_call_id"] for c in calls if c["tool_call_id"] not in results]
    if answered:
        step["observation"] = {
            "results": [
                {"source_call_id": c["tool_call_id"], "content": results[c["tool_call_id"]][0]} for c in answered
            ]
        }
    errors = any(results[c["tool_call_id"]][1] for c in answered)
    codes = [results[c["tool_call_id"]][2] for c in answered if results[c["tool_call_id"]][2] is not None]
    if len(codes) == 1 and len(calls) == 1:
        step["exit_code"] = codes[0]
    if any(c != 0 for c in codes):
        errors = True
    if lost:
        step["extra"]["missing_result"] = True
        step["extra"]["unanswered_call_ids"] = lost
    step.setdefault("outcome", "error" if (lost or errors) else "ok")
    return len(lost)


def _paired_one(step: dict, cid: str, results: dict[str, tuple[str, bool, int | None]]) -> int:
    """:func:`_paired` for a step of one call (``cid``), the common step, with less work (the same result:
    tests/tools/trajectories/test_trajectories_import_bulk.py)."""
    res = results.get(cid)
    if res is None:
        step["extra"]["missing_result"] = True
        step["extra"]["unanswered_call_ids"] = [cid]
        step.setdefault("outcome", "error")
        return 1
    content, error, code = res
    step["observation"] = {"results": [{"source_call_id": cid, "content": content}]}
    if code is not None:
        step["exit_code"] = code
    step.setdefault("outcome", "error" if error or (code is not None and code != 0) else "ok")
    return 0


def _parse_time(ts: Any) -> datetime | None:
    """An ISO-8601 time (``Z`` or an offset; naive means UTC) or epoch seconds/milliseconds, else ``None``."""
    try:
        if isinstance(ts, (int, float)) and not isinstance(ts, bool):
            dt = datetime.fromtimestamp(ts / 1000 if ts > 1e11 else ts, UTC)
        elif isinstance(ts, str) and ts.strip():
            v = ts.strip()
            dt = datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith(("Z", "z")) else v)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def _track_time(t: _Traj, ts: Any) -> None:
    """Widen ``t``'s [first, last] event window by ``ts`` (ignored when not a time)."""
    if ts is None or ts == t.last_raw:
        return
    t.last_raw = ts
    dt = _parse_time(ts)
    if dt is None:
        return
    if t.first_at is None or dt < t.first_at:
        t.first_at = dt
    if t.last_at is None or dt > t.last_at:
        t.last_at = dt


def _iso(dt: datetime | None) -> str | None:
    """``dt`` in the store's UTC form (``None`` when absent or not representable in UTC)."""
    try:
        return dt.astimezone(UTC).isoformat(timespec="microseconds")[:26] + "Z" if dt is not None else None
    except (OverflowError, ValueError):
        return None


class _Ctx:
    """Per-file state: the report and helpers to add problems."""

    def __init__(self, path: Path, fmt: str, report: ImportReport):
        self.file = str(path)
        self.fmt = fmt
        self.report = report
        self.skipped: Counter[str] = Counter()

    def problem(self, line: int | None, message: str, *, path: str | None = None, severity: str = "error") -> None:
        self.report.problems.append(
            ImportProblem(file=self.file, line=line, path=path, severity=severity, message=message)
        )

    def warn(self, line: int | None, message: str, *, path: str | None = None) -> None:
        self.problem(line, message, path=path, severity="warning")


def _lines(data: bytes, ctx: _Ctx) -> list[tuple[int, Any]]:
    """Parsed JSON values of a JSONL file with their 1-based line numbers; bad lines become problems."""
    out = []
    fast = not _long_digits(data)  # orjson reads a line where its reading is the json module's
    for n, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.strip()
        if not raw:
            continue
        if fast:
            try:
                value = orjson.loads(raw)  # invalid UTF-8, NaN, lone surrogates, bad JSON: the json module below
                if raw.count(b"[") + raw.count(b"{") >= _ORJSON_DEPTH:
                    orjson.dumps(value)  # raises beyond orjson's depth: the json module's reading then
                out.append((n, value))
                continue
            except (ValueError, TypeError):
                pass
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            ctx.problem(n, f"line is not UTF-8 ({e.reason} at byte {e.start}); skipped")
            continue
        try:
            value = json.loads(text)
        except ValueError as e:
            ctx.problem(n, f"line is not JSON ({e}); skipped")
            continue
        out.append((n, value))
    ctx.report.lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return out


def _parse_args(raw: Any, ctx: _Ctx, line: int | None, where: str) -> dict:
    """Tool-call arguments as a dict: an object, a JSON string of one (or one encoded twice, with a
    warning; see :func:`~agent_rl_sandbox.tools.formats.atif.decode_arguments`). Anything else is kept
    under ``_unparsed_arguments`` with a warning."""
    args, twice = decode_arguments(raw)
    if args is not None:
        if twice:
            ctx.warn(line, "arguments are JSON-encoded twice; decoded", path=where)
        return args
    ctx.warn(line, "arguments are not a JSON object; kept as text under _unparsed_arguments", path=where)
    return {"_unparsed_arguments": raw if isinstance(raw, str) else json.dumps(raw)}


# -- ATIF -------------------------------------------------------------------------------------------
def _parse_atif(data: bytes, ctx: _Ctx, whole: Any = None) -> list[_Traj]:
    """One ATIF document (``whole``, already parsed by :func:`import_file`), a JSON array of them, or
    JSON Lines of them."""
    docs: list[tuple[int, Any]]
    if isinstance(whole, dict):
        docs = [(1, whole)]
    elif isinstance(whole, list):
        docs = [(1, d) for d in whole]
    else:
        docs = _lines(data, ctx)
    out: list[Any] = []
    for line, doc in docs:
        t = _atif_doc(doc, line, ctx, index=len(out))
        if t is not None:
            out.append(t)
    return out


_PAIRING_CODES = frozenset({"duplicate_tool_call_id", "observation_orphan"})


def _atif_doc(raw: Any, line: int, ctx: _Ctx, index: int) -> _Traj | None:
    """One ATIF document, read with the shared reader (:func:`~agent_rl_sandbox.tools.formats.atif.read_document`):
    its findings reject the trajectory; its provenance, reward and pass are claims (``claimed_*``)."""
    fast = (
        _atif_fast_steps(raw["steps"], line) if isinstance(raw, dict) and isinstance(raw.get("steps"), list) else None
    )
    doc = read_document(raw if fast is None else {**raw, "steps": []})
    if doc.not_atif:
        ctx.problem(line, "not an ATIF trajectory: expected an object with a 'steps' list; skipped")
        return None
    for w in doc.warnings:
        ctx.warn(line, w.message, path=w.path)
    for path, message in fast[2] if fast is not None else ():
        ctx.warn(line, message, path=path)
    sid = doc.session_id or f"doc{index}"
    t = _Traj(key=f"{index}:{sid}", line=line, external_id=f"atif:{sid}")
    t.errors.extend(ImportProblem(file=ctx.file, line=line, path=e.path, message=e.message) for e in doc.errors)
    agent = doc.agent
    t.agent = {
        k: agent[k] for k in ("name", "version", "model_name", "tool_definitions", "extra") if agent.get(k) is not None
    }
    t.agent.setdefault("name", "unknown")
    extra = doc.extra
    t.task_id = doc.text("task_id")
    t.behaviour = doc.text("behaviour")
    t.split = extra.get("split") if extra.get("split") in ("train", "heldout") else None
    claimed = {
        f"claimed_{k}": extra[k]
        for k in ("reward", "passed", "self_report_only", "origin", "parent_session_id")
        if k in extra
    }
    t.meta.update(claimed)
    raw = doc.raw if isinstance(doc.raw, dict) else {}
    for k in DOCUMENT_FIELDS:
        if raw.get(k) is not None:
            t.meta[f"atif_{k}"] = raw[k]
    t.meta["_no_parent_inference"] = True  # ATIF session ids are often normalised (Harbor: NORMALIZED_SESSION_ID)
    for k in ("created_at", "finished_at"):  # the file's own times bound the session when no step has one
        t.meta[f"_claimed_{k}"] = extra.get(k)
    if extra.get("final_message"):
        t.meta["final_message"] = extra["final_message"]
    if fast is not None:
        steps, missing, _warnings, sources, times = fast
        for ts in times:
            _track_time(t, ts)
        t.ready, t.sources = (steps, missing), sources
        return t
    for s in doc.steps:
        p = s.path
        if s.errors:
            for e in s.errors:  # pairing findings are reported on the step, the others on their field
                t.errors.append(
                    ImportProblem(
                        file=ctx.file, line=line, path=p if e.code in _PAIRING_CODES else e.path, message=e.message
                    )
                )
            continue
        sext = dict(s.extra)
        if s.source == "agent":
            sext.update(s.fields)  # model_name, reasoning_*: kept in extra, written back to the top level
        rl = s.rl
        if rl.get("provenance") not in (None, "agent"):
            sext["claimed_provenance"] = rl["provenance"]
        if rl.get("reward") is not None:
            sext["claimed_reward"] = rl["reward"]
        step = t.add(s.source, s.message, s.timestamp, **sext)
        step["_src"] = (line, p)
        if s.metrics is not None:
            step["metrics"] = s.metrics
        for k in ("exit_code", "state_ref"):
            if rl.get(k) is not None:
                step[k] = rl[k]
        if rl.get("done") is True:
            step["done"] = True
        if s.calls_problem:
            t.errors.append(
                ImportProblem(file=ctx.file, line=line, path=f"{p}.tool_calls", message="tool_calls is not a list")
            )
            continue
        for c in s.calls:
            cp = f"{p}.tool_calls[{c.index}]"
            if c.tool_call_id is None or c.function_name is None:
                t.errors.append(
                    ImportProblem(
                        file=ctx.file,
                        line=line,
                        path=cp,
                        message="tool call needs string tool_call_id and function_name",
                    )
                )
                continue
            problem = t.call(step, c.tool_call_id, c.function_name, _atif_args(c, ctx, line, f"{cp}.arguments"))
            if problem:
                t.errors.append(ImportProblem(file=ctx.file, line=line, path=cp, message=problem))
        # results stay in the file's order; one without source_call_id is an observation of the step (ATIF
        # makes the id optional: Harbor's terminus-2 writes none), and it answers the step's calls
        for r in s.results:
            if r.source_call_id is not None:
                t.result(r.source_call_id, r.content)
        if s.results:
            step["_observation"] = [
                {
                    "source_call_id": r.source_call_id,
                    "content": r.content if r.has_content else None,
                    **({"subagent_trajectory_ref": r.subagent_trajectory_ref} if r.subagent_trajectory_ref else {}),
                }
                for r in s.results
            ]
        outcome = rl.get("outcome")
        unanswered = (
            step.get("tool_calls")
            and len(step["_results"]) < len(step["tool_calls"])
            and not any(r.source_call_id is None for r in s.results)
        )
        if outcome in ("ok", "error", "refused", "limit", "cancelled", "unknown") and not unanswered:
            step["outcome"] = outcome
    return t


_ATIF_SOURCES = frozenset(SOURCES)
_ADD_ARGS = frozenset({"self", "source", "message", "ts"})
""":meth:`_Traj.add`'s own parameter names (an ``extra`` key named so is left to the general path)."""


class _AtifSources(Sequence[tuple[int | None, str | None]]):
    """Each step's (line, JSON path) for a document the one-pass reader read (step ``i`` is
    ``$.steps[i]``), made on demand: only a rejected step's error names one."""

    __slots__ = ("_line", "_n")

    def __init__(self, line: int, n: int):
        self._line, self._n = line, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> tuple[int | None, str | None]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[int | None, str | None]]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return (self._line, f"$.steps[{i % self._n}]")


_AGENT_FIELDS = frozenset(AGENT_STEP_FIELDS)
_NO_ARGS: dict[str, Any] = {}
"""The default of an absent ``arguments`` (never changed: the store only reads arguments)."""


def _atif_fast_steps(
    raws: list, line: int
) -> tuple[list[dict], int, list[tuple[str, str]], Sequence[tuple[int | None, str | None]], list] | None:
    """The steps of an ATIF document as :meth:`_Traj.finalise` gives them after :func:`_atif_doc` read them
    with the shared reader, in one pass, for documents whose every step is plain: an object with a valid
    ``source``, a string (or no) ``message``, tool calls that are objects with a string ``tool_call_id``, a
    non-empty string ``function_name`` and object (or no, ``null`` or ``""``) arguments, ids unique in the
    document, results that are objects naming one of the step's calls (or none) with string (or no, or
    ``null``) content. ``None`` for any other document, which then takes the general path (its findings,
    warnings and errors are that path's). Returns the steps, the number of calls without a result, the
    reader's ``step_id`` warnings (JSON path, message), each step's (line, JSON path) and the steps' times
    (for :func:`_track_time`, in order, a time repeating the one before left out: it skips those)."""
    out: list[dict] = []
    times: list[str] = []
    last_ts = None
    warnings: list[tuple[str, str]] = []
    all_ids: set[str] = set()
    missing = 0
    expected = 1
    sources_ = _ATIF_SOURCES
    for i, raw in enumerate(raws):
        if raw.__class__ is not dict:
            return None
        get = raw.get
        source = get("source", "agent")
        if source.__class__ is not str or source not in sources_:
            return None
        message = get("message")
        if message is None:
            message = ""
        elif message.__class__ is not str:
            return None
        x = get("extra")
        if x:
            extra = dict(x) if isinstance(x, dict) else {}
            rl = {k: extra.pop(k) for k in RL_STEP_KEYS if k in extra} if extra else None
        else:
            extra, rl = {}, None
        if source == "agent" and not _AGENT_FIELDS.isdisjoint(raw):
            for k in AGENT_STEP_FIELDS:
                if get(k) is not None:
                    extra[k] = raw[k]
        if rl:
            if rl.get("provenance") not in (None, "agent"):
                extra["claimed_provenance"] = rl["provenance"]
            if rl.get("reward") is not None:
                extra["claimed_reward"] = rl["reward"]
        if extra and not _ADD_ARGS.isdisjoint(extra):
            return None
        step: dict[str, Any] = {"source": source, "message": message, "extra": extra}
        ts = get("timestamp")
        if ts.__class__ is str and ts:
            step["timestamp"] = ts
            if ts != last_ts:
                times.append(ts)
                last_ts = ts
        metrics = get("metrics")
        if metrics.__class__ is dict or isinstance(metrics, dict):
            step["metrics"] = metrics
        if rl:
            for k in ("exit_code", "state_ref"):
                if rl.get(k) is not None:
                    step[k] = rl[k]
            if rl.get("done") is True:
                step["done"] = True
        calls = get("tool_calls")
        ids: dict[str, None] | None = None
        if calls is not None:
            if calls.__class__ is not list:
                return None
            if calls:
                ids = {}
                built = []
                for c in calls:
                    if c.__class__ is not dict:
                        return None
                    cget = c.get
                    cid, name, args = cget("tool_call_id"), cget("function_name"), cget("arguments", _NO_ARGS)
                    if cid.__class__ is not str or name.__class__ is not str or not name or cid in all_ids:
                        return None
                    if args.__class__ is not dict:
                        if args is not None and args != "":
                            return None
                        args = {}
                    elif args is _NO_ARGS:  # absent: a dict of its own
                        args = {}
                    all_ids.add(cid)
                    ids[cid] = None
                    built.append({"tool_call_id": cid, "function_name": name, "arguments": args})
                step["tool_calls"] = built
        obs = get("observation")
        answered = 0
        loose = False
        ordered = None
        if obs.__class__ is dict or isinstance(obs, dict):
            results = obs.get("results")
            if results and isinstance(results, list):
                ordered = []
                seen: set[str] = set()
                for r in results:
                    if r.__class__ is not dict:
                        return None
                    rget = r.get
                    sid = rget("source_call_id")
                    if sid is None:
                        loose = True
                    elif sid.__class__ is not str or ids is None or sid not in ids:
                        return None
                    elif sid not in seen:
                        seen.add(sid)
                        answered += 1
                    content = rget("content")
                    if content is None:
                        content = "" if "content" in r else None
                    elif content.__class__ is not str:
                        return None
                    ref = rget("subagent_trajectory_ref")
                    if ref and isinstance(ref, list) and all(isinstance(y, dict) for y in ref):
                        ordered.append({"source_call_id": sid, "content": content, "subagent_trajectory_ref": ref})
                    else:
                        ordered.append({"source_call_id": sid, "content": content})
                step["observation"] = {"results": ordered}
        if rl:
            outcome = rl.get("outcome")
            if outcome in OUTCOMES and not (ids and answered < len(ids) and not loose):
                step["outcome"] = outcome
        if ids:
            if answered < len(ids) and not (loose and ordered is not None):
                done_ = seen if ordered is not None else ()
                lost = [c for c in ids if c not in done_]
                missing += len(lost)
                extra["missing_result"] = True
                extra["unanswered_call_ids"] = lost
                step.setdefault("outcome", "error")
            else:
                step.setdefault("outcome", "ok")
        step["provenance"] = "agent"
        step["client_step_id"] = f"imp:{i + 1}"
        step_id = get("step_id")
        if step_id != expected:
            warnings.append(
                (f"$.steps[{i}].step_id", f"step_id {step_id!r} where {expected} was expected; steps are renumbered")
            )
            expected = step_id if isinstance(step_id, int) and not isinstance(step_id, bool) else expected
        expected += 1
        out.append(step)
    return out, missing, warnings, _AtifSources(line, len(out)), times


def _atif_args(call: AtifCall, ctx: _Ctx, line: int, where: str) -> dict:
    """A call's arguments as the importer keeps them (the policy of :func:`_parse_args`)."""
    if call.arguments is None:
        return _parse_args(call.raw_arguments, ctx, line, where)
    if call.double_encoded:
        ctx.warn(line, "arguments are JSON-encoded twice; decoded", path=where)
    return call.arguments


# -- Claude Code transcripts ------------------------------------------------------------------------
_CC_SKIP_TYPES = frozenset(
    {"summary", "file-history-snapshot", "queue-operation", "progress", "custom-title", "tag", "ai-title", "mode"}
)
_CC_LOCAL_COMMAND = re.compile(
    r"^\s*<(command-name|command-message|command-args|local-command-stdout|local-command-stderr|local-command-caveat)>"
)
_CC_COMMAND_TAG = re.compile(r"<(command-name|command-message|command-args)>(.*?)</\1>", re.DOTALL)
_CC_INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
_CC_SPAWN_TOOLS = frozenset({"Task", "Agent"})
"""Claude Code tools that start a subagent (``Task`` until 2.1, ``Agent`` after); ``input.prompt`` is the
subagent's first user message."""


@dataclass
class _CcState:
    """Per-trajectory state of the Claude Code parser."""

    msg_ids: dict[int, str] = field(default_factory=dict)
    """id(step) -> assistant message id (one message is streamed over several lines)."""
    command: dict[str, Any] | None = None
    """A slash command whose expanded prompt (the next ``isMeta`` user line) has not arrived yet."""


def _cc_user_text(content: Any) -> list[dict]:
    return (
        content
        if isinstance(content, list)
        else [{"type": "text", "text": content if isinstance(content, str) else ""}]
    )


def _cc_line(t: _Traj, st: _CcState, obj: dict, n: int, ctx: _Ctx) -> None:
    """Add one ``user`` or ``assistant`` line of a Claude Code transcript to ``t``."""
    typ, message = obj["type"], obj["message"]
    ts = obj.get("timestamp")
    content = message.get("content")
    if typ == "user":
        texts = []
        for b in _cc_user_text(content):
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_result":
                tid = b.get("tool_use_id")
                res = (
                    t.result(tid, content_text(b.get("content")), error=bool(b.get("is_error")))
                    if isinstance(tid, str)
                    else "unknown"
                )
                if res == "unknown":
                    ctx.warn(n, f"tool_result for tool_use_id {tid!r}, which no earlier tool_use has; skipped")
                elif res == "duplicate":
                    ctx.warn(n, f"second tool_result for {tid!r}; the first is kept")
            elif b.get("type") in ("text", "image"):
                texts.append(content_text([b]))
        text = "\n".join(x for x in texts if x)
        if obj.get("isMeta"):
            # the prompt a slash command expanded to is an isMeta line right after the command: it is the
            # instruction the model saw, so it is the user turn (other meta lines, caveats, are not speech)
            if st.command is not None and text.strip():
                cmd = {k: v for k, v in st.command.items() if k != "_ts"}
                t.add("user", text, ts, **cmd)
                st.command = None
            else:
                ctx.skipped["meta"] += 1
            return
        if not text.strip():
            return
        tags = {m.group(1): m.group(2).strip() for m in _CC_COMMAND_TAG.finditer(text)}
        if "command-name" in tags:
            cmd = {"command": tags["command-name"]}
            if tags.get("command-args"):
                cmd["command_args"] = tags["command-args"]
            rest = _CC_COMMAND_TAG.sub("", text).strip()
            if rest:  # the expansion inline after the tags (skills, older versions)
                t.add("user", rest, ts, **cmd)
                st.command = None
            else:
                st.command = {**cmd, "_ts": ts}
            return
        if _CC_LOCAL_COMMAND.match(text):  # a built-in command's output (/model, /cost...): the model saw none
            ctx.skipped["local_command"] += 1
            st.command = None
        elif _CC_INTERRUPT.match(text.strip()):
            t.add("system", text, ts, event="interrupt")
        else:
            _cc_flush_command(t, st, ctx)
            t.add("user", text, ts)
        return
    # assistant
    _cc_flush_command(t, st, ctx)
    mid = message.get("id") or obj.get("uuid") or str(n)
    last = t.steps[-1] if t.steps else None
    if last is not None and last["source"] == "agent" and st.msg_ids.get(id(last)) == mid:
        step = last
    else:
        step = t.add("agent", "", ts)
        st.msg_ids[id(step)] = mid
    if isinstance(message.get("model"), str) and message["model"] != "<synthetic>":
        t.agent["model_name"] = message["model"]
    usage = message.get("usage")
    if isinstance(usage, dict):
        step["metrics"] = {
            "prompt_tokens": usage.get("input_tokens"),
            "completion_tokens": usage.get("output_tokens"),
            "cached_tokens": usage.get("cache_read_input_tokens"),
        }
    for j, b in enumerate(content if isinstance(content, list) else [{"type": "text", "text": content_text(content)}]):
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and isinstance(b.get("text"), str):
            step["message"] = (step["message"] + "\n\n" + b["text"]) if step["message"] else b["text"]
        elif bt == "thinking":  # ATIF's reasoning_content (the writer puts it at the step's top level)
            step["extra"]["reasoning_content"] = (
                step["extra"].get("reasoning_content", "") + b.get("thinking", "")
            ).strip()
        elif bt == "tool_use":
            if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str):
                ctx.problem(n, "tool_use block without id or name; skipped", path=f"$.message.content[{j}]")
                continue
            args = _parse_args(b.get("input"), ctx, n, f"$.message.content[{j}].input")
            problem = t.call(step, b["id"], b["name"], args)
            if problem:
                t.errors.append(ImportProblem(file=ctx.file, line=n, path=f"$.message.content[{j}]", message=problem))
        else:
            ctx.skipped[f"block:{bt}"] += 1


def _cc_flush_command(t: _Traj, st: _CcState, ctx: _Ctx) -> None:
    """A slash command with no expanded prompt before the next turn: the command line itself is the
    instruction (kept with ``extra.expansion_missing``)."""
    if st.command is None:
        return
    cmd = dict(st.command)
    ts = cmd.pop("_ts", None)
    t.add(
        "user", " ".join(x for x in (cmd["command"], cmd.get("command_args")) if x), ts, expansion_missing=True, **cmd
    )
    st.command = None


def _parse_claude_code(data: bytes, ctx: _Ctx, path: Path | None = None) -> list[_Traj]:
    """A Claude Code transcript: the main conversation, plus each subagent (``isSidechain`` lines, grouped by
    ``agentId`` or by the chain of ``parentUuid``) as its own trajectory linked to the main session and to
    the ``Task``/``Agent`` call that spawned it. A standalone subagent file (``agent-<id>.jsonl``, every line
    a sidechain) links to the main session stored by an earlier import."""
    t = _Traj(key="session", line=1, agent={"name": "claude-code"})
    states: dict[int, _CcState] = {id(t): _CcState()}
    subs: dict[str, _Traj] = {}
    chain_of: dict[str, str] = {}  # uuid -> sidechain key
    spawned: dict[str, str] = {}  # agentId -> tool_use_id of the spawning call (from toolUseResult)
    session_id: str | None = None
    for n, obj in _lines(data, ctx):
        _AT_LINE.set(n)
        if not isinstance(obj, dict):
            ctx.problem(n, f"line is a JSON {type(obj).__name__}, not an object; skipped")
            continue
        typ = obj.get("type")
        if typ is None:
            ctx.warn(n, "line has no 'type'; skipped")
            ctx.skipped["untyped"] += 1
            continue
        if isinstance(obj.get("sessionId"), str) and session_id is None:
            session_id = obj["sessionId"]
            t.external_id = f"claude-code:{session_id}"
            t.key = session_id
            for k in ("cwd", "gitBranch"):
                if obj.get(k):
                    t.meta[k] = obj[k]
            if obj.get("version"):
                t.agent["version"] = obj["version"]
        if not obj.get("isSidechain"):  # every event of the main session bounds its time, steps or not
            _track_time(t, obj.get("timestamp"))
        if typ in _CC_SKIP_TYPES:
            ctx.skipped[typ] += 1
            continue
        if typ == "system":
            ctx.skipped[f"system:{obj.get('subtype', 'unknown')}"] += 1
            continue
        if typ not in ("user", "assistant"):
            ctx.warn(n, f"unknown line type {typ!r}; skipped")
            ctx.skipped[f"unknown:{typ}"] += 1
            continue
        if not isinstance(obj.get("message"), dict):
            ctx.problem(n, f"{typ} line has no 'message' object; skipped")
            continue
        target = t
        if obj.get("isSidechain"):
            target = _cc_sidechain(obj, n, subs, chain_of, session_id)
            states.setdefault(id(target), _CcState())
            _track_time(target, obj.get("timestamp"))
        else:
            tur = obj.get("toolUseResult")
            if isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
                for b in _cc_user_text(obj["message"].get("content")):
                    if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
                        spawned[tur["agentId"]] = b["tool_use_id"]
        _cc_line(target, states[id(target)], obj, n, ctx)
    out = []
    for tr in (t, *subs.values()):
        _cc_flush_command(tr, states[id(tr)], ctx)
        tr.steps = [s for s in tr.steps if s["message"] or s.get("tool_calls") or s["source"] != "agent" or s["extra"]]
    if t.external_id is None:
        t.external_id = "claude-code:unknown"
    if t.steps or t.errors:
        out.append(t)
    standalone = not t.steps and bool(subs)
    sidecar = _cc_sidecar(path) if standalone and path is not None else {}
    for sub in subs.values():
        first = next((s["message"] for s in sub.steps if s["source"] == "user"), None)
        if not any(s["source"] == "agent" for s in sub.steps):
            ctx.skipped["sidechain:no_agent_step"] += 1
            continue
        call_id = spawned.get(sub.meta.get("agent_id", "")) or sidecar.get("toolUseId")
        if call_id is None and first is not None:  # the spawning call's prompt is the subagent's first message
            call_id = next(
                (
                    cid
                    for cid, (_, c) in t.calls.items()
                    if c["function_name"] in _CC_SPAWN_TOOLS and c["arguments"].get("prompt") == first
                ),
                None,
            )
        if call_id is None and first is not None and first.strip() == "Warmup":
            ctx.skipped["sidechain:warmup"] += 1  # Claude Code 2.0 warms each subagent's cache with "Warmup"
            continue
        if isinstance(call_id, str):
            sub.meta["spawned_by_call_id"] = call_id
        for k in ("agentType", "description"):
            if isinstance(sidecar.get(k), str):
                sub.meta[f"subagent_{k.lower() if k == 'description' else 'type'}"] = sidecar[k]
        sub.meta["parent_external_id"] = t.external_id
        if not standalone:
            sub.meta["_parent_key"] = t.key
        out.append(sub)
    return out


def _cc_sidechain(obj: dict, n: int, subs: dict[str, _Traj], chain_of: dict[str, str], session_id: str | None) -> _Traj:
    """The subagent trajectory a sidechain line belongs to: by ``agentId`` (Claude Code 2.x), else by the
    chain of ``parentUuid`` (older transcripts, where each sidechain starts at a root line)."""
    uuid, parent = obj.get("uuid"), obj.get("parentUuid")
    if isinstance(obj.get("agentId"), str):
        key = obj["agentId"]
    elif isinstance(parent, str) and parent in chain_of:
        key = chain_of[parent]
    else:
        key = uuid if isinstance(uuid, str) else f"line{n}"
    if isinstance(uuid, str):
        chain_of[uuid] = key
    sub = subs.get(key)
    if sub is None:
        sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else session_id
        label = key if key.startswith("agent-") else f"agent-{key}"
        sub = _Traj(
            key=f"{sid}:{label}",
            line=n,
            agent={"name": "claude-code", **({"version": obj["version"]} if obj.get("version") else {})},
            external_id=f"claude-code:{sid}:{label}",
        )
        sub.meta["subagent"] = True
        if isinstance(obj.get("agentId"), str):
            sub.meta["agent_id"] = obj["agentId"]
        subs[key] = sub
    return sub


def _cc_sidecar(path: Path) -> dict:
    """``agent-<id>.meta.json`` next to a subagent transcript (Claude Code 2.1: ``agentType``,
    ``description``, ``toolUseId`` of the spawning call); ``{}`` when absent or unreadable."""
    side = path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")
    try:
        doc = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


# -- Codex rollouts -------------------------------------------------------------------------------
_CODEX_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "reasoning",
        "web_search_call",
    }
)
_CODEX_CONTEXT = re.compile(r"^\s*(<environment_context>|<user_instructions>|# AGENTS\.md instructions)")
_CODEX_EXIT = re.compile(r"^Exit code:\s*(-?\d+)", re.MULTILINE)


def _codex_output(raw: Any) -> tuple[str, bool, int | None]:
    """Content, error flag and exit code of a function/custom tool call output."""
    if isinstance(raw, dict):
        content = raw.get("content")
        return (
            (content_text(content) if content is not None else json.dumps(raw, ensure_ascii=False)),
            raw.get("success") is False,
            None,
        )
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        parsed = loads(text)  # json.loads, read by orjson where that reads the same
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and "output" in parsed:
        raw_meta = parsed.get("metadata")
        meta: dict = raw_meta if isinstance(raw_meta, dict) else {}
        code = meta.get("exit_code") if isinstance(meta.get("exit_code"), int) else None
        return content_text(parsed["output"]), code not in (None, 0), code
    m = _CODEX_EXIT.search(text)
    code = int(m.group(1)) if m else None
    return text, code not in (None, 0), code


def _codex_records(data: bytes, ctx: _Ctx) -> list[tuple[int, str | None, dict, Any]]:
    """``(line, type, payload, timestamp)`` of each well-formed line; older rollouts' bare response items
    and bare meta line are given their modern type."""
    out = []
    for n, obj in _lines(data, ctx):
        if not isinstance(obj, dict):
            ctx.problem(n, f"line is a JSON {type(obj).__name__}, not an object; skipped")
            continue
        typ, payload, ts = obj.get("type"), obj.get("payload"), obj.get("timestamp")
        if payload is None and typ in _CODEX_ITEM_TYPES:  # older rollouts: bare response items
            typ, payload = "response_item", obj
        elif payload is None and "id" in obj and "instructions" in obj:  # older rollouts: bare meta line
            typ, payload = "session_meta", obj
        if not isinstance(payload, dict):
            ctx.problem(n, f"line of type {typ!r} has no 'payload' object; skipped")
            continue
        out.append((n, typ, payload, ts))
    return out


_CODEX_EVENT_TURNS = frozenset(
    {
        "user_message",
        "agent_message",
        "exec_command_begin",
        "exec_command_end",
        "patch_apply_begin",
        "patch_apply_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
    }
)
"""``event_msg`` types that carry a turn or a command: imported when their ``response_item`` twin is absent
(some Codex versions and ``codex exec`` write only these), skipped (counted) when it is present."""


def _codex_twins(records: list[tuple[int, str | None, dict, Any]]) -> tuple[Counter[tuple[str, str]], set, set]:
    """What the ``response_item`` lines already hold: message texts by role, call ids, output call ids."""
    texts: Counter[tuple[str, str]] = Counter()
    calls, outputs = set(), set()
    for _, typ, p, _ in records:
        if typ != "response_item":
            continue
        it = p.get("type")
        if it == "message" and p.get("role") in ("user", "assistant"):
            texts[(p["role"], content_text(p.get("content")).strip())] += 1
        elif it in ("function_call", "custom_tool_call", "local_shell_call"):
            calls.add(p.get("call_id") or p.get("id"))
        elif it in ("function_call_output", "custom_tool_call_output"):
            outputs.add(p.get("call_id"))
    return texts, calls, outputs


def _codex_event(
    t: _Traj, p: dict, n: int, ts: Any, ctx: _Ctx, twins: tuple[Counter[tuple[str, str]], set, set]
) -> None:
    """One turn- or command-carrying ``event_msg`` whose twin may be missing (see :data:`_CODEX_EVENT_TURNS`)."""
    texts, calls, outputs = twins
    et = str(p.get("type"))
    cid = p.get("call_id")
    if et in ("user_message", "agent_message"):
        role = "user" if et == "user_message" else "assistant"
        raw = p.get("message")
        text = raw.strip() if isinstance(raw, str) else ""
        if texts[(role, text)] > 0:  # the response_item twin holds it: counted once
            texts[(role, text)] -= 1
            ctx.skipped[f"event_msg:{et}"] += 1
        elif not text:
            ctx.skipped[f"event_msg:{et}:empty"] += 1
        elif role == "user" and (
            _CODEX_CONTEXT.match(text) or p.get("kind") in ("environment_context", "user_instructions")
        ):
            t.add("system", text, ts, context="environment")
        elif role == "user":
            t.add("user", text, ts)
        else:
            t.add("agent", text, ts)["_closed"] = False
        return
    if not isinstance(cid, str):
        ctx.warn(n, f"event_msg {et} without call_id; skipped")
        ctx.skipped[f"event_msg:{et}:no_call_id"] += 1
        return
    begin = et.endswith("_begin")
    if cid in calls:  # the response_item call is the call; its begin event adds nothing
        if begin:
            ctx.skipped[f"event_msg:{et}"] += 1
            return
    elif cid not in t.calls:  # no twin: the event is the call (an end without its begin still names it)
        name, args = _codex_event_call(et, p)
        problem = t.call(t.open_agent_step(ts), cid, name, args)
        if problem:
            t.errors.append(ImportProblem(file=ctx.file, line=n, path="$.payload.call_id", message=problem))
            return
    if begin:
        return
    if cid in outputs:  # the response_item output is the result
        ctx.skipped[f"event_msg:{et}"] += 1
        return
    content, error, code = _codex_event_result(et, p)
    res = t.result(cid, content, error=error, exit_code=code)
    if res == "duplicate":
        ctx.warn(n, f"second result for {cid!r}; the first is kept")
    elif res == "unknown":
        ctx.warn(n, f"{et} for call_id {cid!r} before the call itself; skipped")


def _codex_event_call(et: str, p: dict) -> tuple[str, dict]:
    """Tool name and arguments of a command event (``shell``/``apply_patch``/``mcp__<server>__<tool>``)."""
    if et.startswith("exec_command"):
        args: dict[str, Any] = {"command": p.get("command")}
        if p.get("cwd"):
            args["workdir"] = p["cwd"]
        return "shell", args
    if et.startswith("patch_apply"):
        return "apply_patch", {"changes": p.get("changes")} if "changes" in p else {}
    inv = p.get("invocation")
    inv = inv if isinstance(inv, dict) else {}
    raw = inv.get("arguments")
    return f"mcp__{inv.get('server', '?')}__{inv.get('tool', '?')}", raw if isinstance(raw, dict) else {}


def _codex_event_result(et: str, p: dict) -> tuple[str, bool, int | None]:
    """Content, error flag and exit code of a command's end event."""
    if et == "exec_command_end":
        code = p.get("exit_code") if isinstance(p.get("exit_code"), int) else None
        text = p.get("aggregated_output")
        if not isinstance(text, str):
            text = "".join(x for x in (p.get("stdout"), p.get("stderr")) if isinstance(x, str))
        return text or (p.get("formatted_output") or ""), code not in (None, 0), code
    if et == "patch_apply_end":
        text = "".join(x for x in (p.get("stdout"), p.get("stderr")) if isinstance(x, str))
        return text, p.get("success") is False, None
    result = p.get("result")
    err = isinstance(result, dict) and ("Err" in result or (result.get("Ok") or {}).get("isError") is True)
    return json.dumps(result, ensure_ascii=False, default=str), bool(err), None


def _parse_codex(data: bytes, ctx: _Ctx) -> list[_Traj]:
    t = _Traj(key="session", line=1, agent={"name": "codex"})
    records = _codex_records(data, ctx)
    twins = None  # built at the first event that needs them (a rollout may have none)
    for n, typ, payload, ts in records:
        _AT_LINE.set(n)
        _track_time(t, ts)
        if typ == "session_meta":
            if isinstance(payload.get("id"), str):
                t.key = payload["id"]
                t.external_id = f"codex:{payload['id']}"
            _track_time(t, payload.get("timestamp"))
            if payload.get("cli_version"):
                t.agent["version"] = str(payload["cli_version"])
                t.meta["cli_version"] = str(payload["cli_version"])
            for k in ("cwd", "originator", "model_provider"):
                if payload.get(k):
                    t.meta[k] = payload[k]
            if isinstance(payload.get("instructions"), str) and payload["instructions"].strip():
                t.add("system", payload["instructions"], ts, context="instructions")
            continue
        if typ == "turn_context":
            if isinstance(payload.get("model"), str):
                t.agent["model_name"] = payload["model"]
            ctx.skipped["turn_context"] += 1
            continue
        if typ == "event_msg" and payload.get("type") in _CODEX_EVENT_TURNS:
            if twins is None:
                twins = _codex_twins(records)
            _codex_event(t, payload, n, ts, ctx, twins)
            continue
        if typ in ("event_msg", "compacted"):
            ctx.skipped[f"{typ}:{payload.get('type', '?')}" if typ == "event_msg" else typ] += 1
            continue
        if typ != "response_item":
            ctx.warn(n, f"unknown line type {typ!r}; skipped")
            ctx.skipped[f"unknown:{typ}"] += 1
            continue
        it = payload.get("type")
        if it == "message":
            role, text = payload.get("role"), content_text(payload.get("content"))
            if not text.strip():
                ctx.skipped["empty_message"] += 1
            elif role == "user" and _CODEX_CONTEXT.match(text):
                t.add("system", text, ts, context="environment")
            elif role == "user":
                t.add("user", text, ts)
            elif role == "assistant":
                step = t.add("agent", text, ts)
                step["_closed"] = False
            elif role in ("developer", "system"):
                t.add("system", text, ts)
            else:
                ctx.warn(n, f"message with unknown role {role!r}; skipped")
        elif it in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = payload.get("call_id") or payload.get("id")
            if not isinstance(call_id, str):
                ctx.problem(n, f"{it} without call_id; skipped")
                continue
            if it == "function_call":
                name, args = payload.get("name"), _parse_args(payload.get("arguments"), ctx, n, "$.payload.arguments")
            elif it == "custom_tool_call":
                name, args = payload.get("name"), {"input": payload.get("input", "")}
            else:
                action = payload.get("action")
                name, args = "local_shell", action if isinstance(action, dict) else {}
            if not isinstance(name, str):
                ctx.problem(n, f"{it} without a name; skipped")
                continue
            problem = t.call(t.open_agent_step(ts), call_id, name, args)
            if problem:
                t.errors.append(ImportProblem(file=ctx.file, line=n, path="$.payload.call_id", message=problem))
        elif it in ("function_call_output", "custom_tool_call_output"):
            content, error, code = _codex_output(payload.get("output"))
            res = t.result(payload.get("call_id"), content, error=error, exit_code=code)  # type: ignore[arg-type]  # None is a problem t.result reports
            if res == "unknown":
                ctx.warn(n, f"output for call_id {payload.get('call_id')!r}, which no earlier call has; skipped")
            elif res == "duplicate":
                ctx.warn(n, f"second output for {payload.get('call_id')!r}; the first is kept")
        elif it in ("reasoning", "web_search_call"):
            ctx.skipped[it] += 1
        else:
            ctx.warn(n, f"unknown response item type {it!r}; skipped")
            ctx.skipped[f"unknown_item:{it}"] += 1
    if t.external_id is None:
        t.external_id = "codex:unknown"
    return [t] if (t.steps or t.errors) else []


# -- OpenAI-style chat logs -----------------------------------------------------------------------
def _parse_openai_chat(data: bytes, ctx: _Ctx, file_sha: str) -> list[_Traj]:
    out = []
    for n, obj in _lines(data, ctx):
        _AT_LINE.set(n)
        if not isinstance(obj, dict):
            ctx.problem(n, f"line is a JSON {type(obj).__name__}, not an object; skipped")
            continue
        messages, tools, model = obj.get("messages"), obj.get("tools"), obj.get("model")
        if messages is None and isinstance(obj.get("request"), dict):  # logged request/response pairs
            raw_resp = obj.get("response")
            req: dict = obj["request"]
            resp: dict = raw_resp if isinstance(raw_resp, dict) else {}
            messages, tools, model = req.get("messages"), req.get("tools"), resp.get("model") or req.get("model")
            choices = resp.get("choices")
            if isinstance(messages, list) and isinstance(choices, list) and choices and isinstance(choices[0], dict):
                messages = [*messages, choices[0].get("message")]
        if not isinstance(messages, list) or not messages:
            ctx.problem(n, "line has no non-empty 'messages' list; skipped", path="$.messages")
            continue
        t = _Traj(key=f"line{n}", line=n, agent={"name": "openai-chat"}, external_id=f"openai_chat:{file_sha[:16]}:{n}")
        if isinstance(model, str):
            t.agent["model_name"] = model
        if isinstance(tools, str):
            try:
                tools = json.loads(tools)
            except ValueError:
                ctx.warn(n, "tools is a string that is not JSON; ignored", path="$.tools")
                tools = None
        if isinstance(tools, list):
            t.agent["tool_definitions"] = [x for x in tools if isinstance(x, dict)]
        elif isinstance(obj.get("functions"), list):
            t.agent["tool_definitions"] = [
                {"type": "function", "function": f} for f in obj["functions"] if isinstance(f, dict)
            ]
        for i, m in enumerate(messages):
            p = f"$.messages[{i}]"
            if not isinstance(m, dict):
                ctx.problem(n, "message is not an object; skipped", path=p)
                continue
            role, text = m.get("role"), content_text(m.get("content"))
            if role in ("system", "developer"):
                t.add("system", text)
            elif role == "user":
                t.add("user", text)
            elif role == "assistant":
                extra = {"weight": m["weight"]} if "weight" in m else {}
                step = t.add("agent", text, **extra)
                step["_closed"] = False
                for j, c in enumerate(m.get("tool_calls") or []):
                    fn = c.get("function") if isinstance(c, dict) else None
                    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                        ctx.problem(n, "tool call without function.name; skipped", path=f"{p}.tool_calls[{j}]")
                        continue
                    cid = c.get("id") if isinstance(c.get("id"), str) else f"call_{i}_{j}"
                    args = _parse_args(fn.get("arguments"), ctx, n, f"{p}.tool_calls[{j}].function.arguments")
                    problem = t.call(step, cid, fn["name"], args)
                    if problem:
                        t.errors.append(
                            ImportProblem(file=ctx.file, line=n, path=f"{p}.tool_calls[{j}]", message=problem)
                        )
                fc = m.get("function_call")
                if isinstance(fc, dict) and isinstance(fc.get("name"), str):
                    t.call(
                        step,
                        f"call_{i}_fc",
                        fc["name"],
                        _parse_args(fc.get("arguments"), ctx, n, f"{p}.function_call.arguments"),
                    )
            elif role in ("tool", "function"):
                cid = m.get("tool_call_id")
                if not isinstance(cid, str):  # legacy function role or a tool message without id: by name
                    cid = next(
                        (
                            k
                            for k, (s, c) in t.calls.items()
                            if c["function_name"] == m.get("name") and k not in s["_results"]
                        ),
                        None,
                    )
                if cid is None or t.result(cid, text) != "ok":
                    ctx.warn(
                        n,
                        f"{role} message answers no pending call ({m.get('tool_call_id') or m.get('name')!r}); skipped",
                        path=p,
                    )
            else:
                ctx.problem(n, f"message role {role!r} is unknown; skipped", path=f"{p}.role")
        if not t.steps and not t.errors:
            ctx.problem(n, "line yields no steps", path="$.messages")
            continue
        out.append(t)
    return out


# -- driver -----------------------------------------------------------------------------------------
@dataclass
class _Whole:
    """How a file reads as one JSON document (see :func:`_whole_document`)."""

    doc: Any = None
    """The parsed document when the file is one JSON document (pretty-printed or not)."""
    error: str | None = None
    """``not valid JSON: <msg> at line L column C`` when the file is one broken JSON document."""
    line: int | None = None


_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_ORJSON_DEPTH = 254
"""orjson writes values nested at most this deep (a value read by orjson is checked by writing it only when
its text has this many brackets: fewer cannot nest deeper)."""


def _long_digits(data: bytes) -> bool:
    """True when ``data`` holds 19 digits in a row (orjson reads integers beyond 64 bits as floats)."""
    return b"0" * 19 in data.translate(_DIGITS_TO_ZERO)


def _orjson_document(data: bytes, text: str | None = None) -> Any:
    """``json.loads(text)`` (``text`` defaults to ``data`` decoded: then orjson reads the bytes, and
    refuses a BOM), read by orjson (about 2x faster), or ``None`` where orjson's reading could
    differ from the json module's: text holding 19 digits in a row (orjson reads integers beyond 64 bits
    as floats), text orjson refuses (NaN and Infinity, lone surrogate escapes, more than one value, bad
    JSON: the json module's reading and errors then) and values nested deeper than orjson writes (254
    levels: the json module stops near 1,000, orjson's reader at 1,024). Duplicate keys read alike (the
    last value, at the first key's place)."""
    if _long_digits(data):
        return None
    try:
        doc = orjson.loads(data if text is None else text)
        orjson.dumps(doc)  # raises beyond 254 levels: then the json module's reading (its own depth limit)
    except (ValueError, TypeError):  # orjson.JSONDecodeError is a ValueError; too deep to write, a TypeError
        return None
    return doc


def _whole_document(data: bytes) -> _Whole:
    """Read ``data`` as one JSON document when it is one, whatever its size or line layout.

    JSON Lines (the first value parses and more follows, or the first line parses on its own) give an empty
    :class:`_Whole`; so does text that does not start with ``{`` or ``[``. A file whose first line is not
    JSON and whose parse fails beyond that line (or that has one line) is one broken document: its error
    names line and column once, instead of one error per line."""
    doc = _orjson_document(data)  # the common case, without decoding the text first
    if doc is not None:
        return _Whole(doc=doc) if doc.__class__ in (dict, list) else _Whole()  # a scalar: not a document
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return _Whole()
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return _Whole()
    doc = _orjson_document(data, text) if data.startswith(codecs.BOM_UTF8) else None  # else as the bytes read
    if doc is not None:
        return _Whole(doc=doc)
    try:
        return _Whole(doc=json.loads(text))
    except RecursionError:
        return _Whole(error="not valid JSON: nested too deeply", line=1)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # one value, then more: JSON Lines
            return _Whole()
        first, _, rest = stripped.partition("\n")  # no split of the whole file: it may be large
        try:
            json.loads(first)
            return _Whole()  # the first line is a document of its own: JSON Lines with a bad line later
        except (ValueError, RecursionError):
            pass
        if e.lineno > text[: len(text) - len(stripped)].count("\n") + 1 or not rest.strip():
            return _Whole(error=f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", line=e.lineno)
        return _Whole()


def _classify(obj: Any) -> str | None:
    """The format one JSON object (a line, or a whole document) belongs to; ``None`` when it tells nothing."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("steps"), list) and ("schema_version" in obj or "session_id" in obj or "agent" in obj):
        return "atif"
    if obj.get("type") in ("session_meta", "response_item", "turn_context", "event_msg", "compacted") and (
        "payload" in obj
    ):
        return "codex"
    if (
        "sessionId" in obj
        or "parentUuid" in obj
        or obj.get("type") in ("summary", "file-history-snapshot", "queue-operation")
    ):
        return "claude_code"
    if "messages" in obj or "request" in obj:
        return "openai_chat"
    if obj.get("type") in _CODEX_ITEM_TYPES or ("id" in obj and "instructions" in obj):
        return "codex"
    if isinstance(obj.get("steps"), list):
        return "atif"
    return None


DETECT_LINES = 50
"""Non-blank JSON Lines looked at to tell a format (each whole, however long)."""


def detect_format(path: Path, data: bytes, whole: _Whole | None = None) -> str | None:
    """Tell the format from the content: a whole JSON document (an ATIF trajectory, an array of them, or one
    record of a line format) or the first :data:`DETECT_LINES` lines of JSON Lines, each read whole, so
    neither the size of a line nor pretty-printing changes the answer. ``None`` when unsure."""
    whole = whole if whole is not None else _whole_document(data)
    if whole.doc is not None:
        docs = whole.doc if isinstance(whole.doc, list) else [whole.doc]
        for d in docs[:DETECT_LINES]:
            fmt = _classify(d)
            if fmt is not None:
                return fmt
        return None
    seen = 0
    start = 0
    while seen < DETECT_LINES and start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        raw = data[start:end].strip()
        start = end + 1
        if not raw:
            continue
        seen += 1
        try:
            obj = json.loads(raw.decode("utf-8-sig"))
        except (ValueError, RecursionError):
            continue
        fmt = _classify(obj)
        if fmt is not None:
            return fmt
    return None


def _is_hook_event(doc: Any) -> bool:
    """Whether ``doc`` (or the first item of a list) is a Claude Code / Codex hook event payload."""
    first = doc[0] if isinstance(doc, list) and doc else doc
    return isinstance(first, dict) and isinstance(first.get("hook_event_name"), str)


def _undetected_why(data: bytes, whole: _Whole | None = None) -> str:
    """Why :func:`detect_format` found nothing, for its error: ``": the file is empty"``, ``": not
    UTF-8 (byte 0xff at offset 0)"``, that the file is one pretty-printed JSON document of no known
    format (naming a hook event payload as such), ``": no line is JSON"`` or ``""`` (JSON, but no
    known shape)."""
    if not data.strip():
        return ": the file is empty"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return f": not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})"
    whole = whole if whole is not None else _whole_document(data)
    if whole.doc is not None:
        lines = text.strip().count("\n") + 1
        shape = f"one JSON document over {lines} lines (pretty-printed), not JSON Lines" if lines > 1 else "JSON"
        if _is_hook_event(whole.doc):
            return f": it is {shape}: a hook event payload (`hook_event_name`), which `import` does not read"
        if lines > 1:
            return f": it is {shape}, and of no format `import` reads"
        return ""
    for line in text.splitlines():
        if line.strip():
            try:
                json.loads(line)
            except (ValueError, RecursionError):
                continue
            return ""
    return ": no line is JSON"


def _spawning_call(store: TrajectoryRepository, spawner: str, sub: _Traj) -> str | None:
    """The ``Task``/``Agent`` call of the stored main session whose ``prompt`` is the subagent's first message
    (how a standalone ``agent-<id>.jsonl`` without a ``.meta.json`` sidecar finds the call that spawned it)."""
    first = next((s["message"] for s in sub.steps if s["source"] == "user"), None)
    if first is None:
        return None
    for step in store.get(spawner).steps:
        for c in step.tool_calls or []:
            if c.function_name in _CC_SPAWN_TOOLS and c.arguments.get("prompt") == first:
                return c.tool_call_id
    return None


def _session_id(fmt: str, file_sha: str, key: str) -> str:
    return "imp_" + hashlib.sha256(f"{fmt}\0{file_sha}\0{key}".encode()).hexdigest()[:20]


def import_file(
    store: TrajectoryRepository,
    path: str | Path,
    *,
    format: str | None = None,
    task_lookup: TaskLookup | None = None,
) -> ImportReport:
    """Import one file into ``store`` and report what happened (never raises on file content).

    ``format`` is one of :data:`IMPORT_FORMATS` (detected from the content when ``None``). Raises
    :class:`ActionError` only for an unreadable path or an unknown/undetectable format.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ActionError(f"cannot read {path}: {e.strerror}", "check the path and permissions") from None
    with paused_gc():  # parsing and storing build many objects and no cycles (see paused_gc)
        return _import_bytes(store, path, data, format, task_lookup)


def _import_bytes(
    store: TrajectoryRepository, path: Path, data: bytes, format: str | None, task_lookup: TaskLookup | None
) -> ImportReport:
    whole = _whole_document(data)  # a whole document is parsed here, so with the collector paused too
    if format is None:
        if whole.error is not None:  # one broken JSON document: one error, with line and column
            raise ActionError(f"{path}: {whole.error}", "fix the JSON (a JSON Lines file needs one document a line)")
        format = detect_format(path, data, whole)
        if format is None:
            why = _undetected_why(data, whole)
            fix = f"pass --format (one of {', '.join(IMPORT_FORMATS)})"
            if why.startswith(": the file is empty"):
                fix = "check the path: there is nothing to import"
            elif why.startswith(": not UTF-8"):
                fix = "import the transcript file itself (JSON or JSON Lines, UTF-8), or " + fix
            elif "hook event payload" in why:
                fix = (
                    "pipe one event to `agent-rl-sandbox hook claude-code` (or `hook codex`) on stdin, which records "
                    "it; to import the session, import its transcript (the event's `transcript_path`: JSON Lines, "
                    "one JSON object per line)"
                )
            elif "pretty-printed" in why:
                fix = (
                    "pass a file of a known format: an ATIF trajectory document, or JSON Lines (one JSON object "
                    f"per line) of a Claude Code transcript, a Codex rollout or an OpenAI chat log; or {fix}"
                )
            raise ActionError(f"cannot tell the format of {path}{why}", fix)
    if format not in IMPORT_FORMATS:
        raise ActionError(f"unknown import format {format!r}", f"use one of {', '.join(IMPORT_FORMATS)}")
    return _import_data(store, path, data, whole, format, task_lookup)


def _import_data(
    store: TrajectoryRepository,
    path: Path,
    data: bytes,
    whole: _Whole,
    format: str,
    task_lookup: TaskLookup | None,
) -> ImportReport:
    sha = hashlib.sha256(data).hexdigest()
    report = ImportReport(file=str(path), format=format, sha256=sha)
    ctx = _Ctx(path, format, report)
    if whole.error is not None:
        report.lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        ctx.problem(whole.line, f"{whole.error}; nothing imported (fix the JSON)")
        return report
    lines_data = data
    if whole.doc is not None and format != "atif":  # one pretty-printed record, or an array of records
        docs = whole.doc if isinstance(whole.doc, list) else [whole.doc]
        lines_data = b"".join(json.dumps(d, ensure_ascii=False).encode() + b"\n" for d in docs)
    if format == "atif":
        parsed = _parse_atif(data, ctx, whole.doc)
    elif format == "claude_code":
        parsed = _parse_claude_code(lines_data, ctx, path)
    elif format == "codex":
        parsed = _parse_codex(lines_data, ctx)
    else:
        parsed = _parse_openai_chat(lines_data, ctx, sha)
    if whole.doc is not None:
        report.lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    redactions: Counter[str] = Counter()
    stored: dict[str, str] = {}  # trajectory key -> session id, for subagents of a main session in the file
    for t in parsed:
        _store_one(store, t, format, sha, path, report, redactions, task_lookup, stored)
    report.skipped = dict(sorted(ctx.skipped.items()))
    report.redactions = dict(sorted(redactions.items()))
    if data.strip() and report.steps_seen == 0:
        has_errors = any(p.severity == "error" for p in report.problems)
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(ctx.skipped.items())) or "none"
        if (
            not has_errors
            and "sidechain:warmup" in ctx.skipped
            and set(ctx.skipped) <= {"sidechain:warmup", "meta", *_CC_SKIP_TYPES}
        ):  # a subagent file holding only Claude Code's cache warm-up exchange: nothing to learn from
            ctx.warn(None, f"nothing to import: only a subagent warm-up exchange ({skipped})")
        else:
            ctx.problem(
                None,
                f"no steps imported from a non-empty {format} file"
                + (" (see the problems above, or check --format)" if has_errors else f"; skipped lines: {skipped}"),
            )
    return report


def _final_message(store: TrajectoryRepository, t: _Traj, steps: list[dict], redactions: Counter) -> str | None:
    """The trajectory's final message (the file's own, else the last agent message), redacted."""
    final = next((s["message"] for s in reversed(steps) if s["source"] == "agent" and s["message"]), None)
    final = t.meta.get("final_message") or final
    if final:
        final, c = store.redactor.text(final)
        redactions.update(c)
    return final


def _store_one(
    store: TrajectoryRepository,
    t: _Traj,
    fmt: str,
    sha: str,
    path: Path,
    report: ImportReport,
    redactions: Counter,
    task_lookup: TaskLookup | None,
    stored: dict[str, str] | None = None,
) -> None:
    if t.errors:
        report.problems.extend(t.errors)
        report.problems.append(
            ImportProblem(
                file=str(path),
                line=t.line,
                message=f"trajectory {t.key!r} not imported: {len(t.errors)} error(s) above",
            )
        )
        return
    steps, missing = t.finalise()
    if not steps:
        return
    claimed_times = {k: t.meta.pop(k) for k in ("_claimed_created_at", "_claimed_finished_at") if k in t.meta}
    report.steps_seen += len(steps)
    report.missing_results += missing
    bad = lone_surrogate_at(  # what the trajectory's row holds as text (meta is stored as ASCII JSON)
        {
            "agent": t.agent,
            "task_id": t.task_id,
            "behaviour": t.behaviour,
            "external_id": t.external_id,
            "final_message": t.meta.get("final_message"),
            "meta.parent_external_id": t.meta.get("parent_external_id"),
            "session_id": t.key,  # what the stored id is derived from
        }
    )
    if bad is not None:  # before the store is asked anything about it (a lookup by external id)
        report.problems.append(
            ImportProblem(
                file=str(path),
                line=t.line,
                message=f"trajectory {t.key!r} cannot be stored (stored field {bad}): {NOT_UNICODE}; the "
                "trajectory is not imported (nothing of it written)",
            )
        )
        return
    sid = _session_id(fmt, sha, t.key)
    if stored is not None:
        stored[t.key] = sid
    behaviour, split = t.behaviour, "heldout" if t.split == "heldout" else None
    if t.task_id and task_lookup is not None:
        known = task_lookup(t.task_id)
        if known is not None:
            behaviour, split = known[0] or behaviour, known[1] or split
    if store.exists(sid):
        summary = store.summary(sid)
        if summary.status == "finished":
            report.already_imported.append(sid)
            return
    else:
        prev = store.by_external_id(t.external_id) if t.external_id else []
        parent = prev[-1].session_id if prev else None
        meta = {"file": str(path), "sha256": sha, "line": t.line, "format": fmt, **t.meta}
        parent_key = meta.pop("_parent_key", None)
        if meta.pop("_no_parent_inference", False):
            # two files sharing a session id are not versions of one session (Harbor normalises every id to
            # NORMALIZED_SESSION_ID): an ATIF import is linked to nothing; an earlier import is only noted
            if parent is not None:
                meta["same_session_id_as"] = parent
            parent = None
        if meta.get("subagent"):  # a subagent's parent is the session that spawned it, not an earlier import
            if parent is not None:
                meta["previous_import"] = parent
            spawner = (stored or {}).get(parent_key) if parent_key else None
            if spawner is None and meta.get("parent_external_id"):
                found = store.by_external_id(meta["parent_external_id"])
                spawner = found[-1].session_id if found else None
            if spawner is not None and "spawned_by_call_id" not in meta:
                call = _spawning_call(store, spawner, t)
                if call is not None:
                    meta["spawned_by_call_id"] = call
            if spawner is None:
                report.problems.append(
                    ImportProblem(
                        file=str(path),
                        line=t.line,
                        severity="warning",
                        message=f"subagent {t.key!r}: its main session {meta.get('parent_external_id')!r} is not "
                        "in the store; imported unlinked (import the main transcript first to link them)",
                    )
                )
            parent = spawner
        agent, c = store.redactor.value(t.agent)
        redactions.update(c)
        final = _final_message(store, t, steps, redactions)
        try:  # the whole trajectory in one transaction: a bad step or a crash leaves nothing of it
            bulk = store.import_trajectory(
                session_id=sid,
                steps_in=steps,
                agent=agent,
                task_id=t.task_id,
                behaviour=behaviour,
                split=split,
                origin=f"import:{fmt}",
                external_id=t.external_id,
                meta=meta,
                parent_session_id=parent,
                created_at=_iso(t.first_at or _parse_time(claimed_times.get("_claimed_created_at"))),
                final_message=final,
                finished_at=_iso(t.last_at or _parse_time(claimed_times.get("_claimed_finished_at"))),
            )
        except StepRejected as e:
            line, where = t.sources[e.index] if e.index < len(t.sources) else (None, None)
            field_ = f" (stored field {e.field})" if e.field else ""
            report.problems.append(
                ImportProblem(
                    file=str(path),
                    line=line if line is not None else t.line,
                    path=where,
                    message=f"step {e.index + 1} of trajectory {t.key!r} cannot be stored{field_}: {e.reason}; "
                    "the trajectory is not imported (nothing of it written)",
                )
            )
            return
        except TrajectoryExists:  # a concurrent import of the same file stored it first (whole: one transaction)
            report.already_imported.append(sid)
            return
        redactions.update(bulk.redactions)
        report.steps += bulk.steps
        report.trajectories.append(sid)
        if t.meta.get("subagent"):
            report.subagents.append(sid)
        return
    written = 0  # an interrupted import of an older release resumes: client step ids skip what is stored
    for i in range(0, len(steps), CHUNK):
        res = store.log_steps(sid, steps[i : i + CHUNK], keep_absent_timestamps=True)
        redactions.update(res.redactions)
        written += sum(res.created)
    final = _final_message(store, t, steps, redactions)
    store.finish(
        sid, final_message=final, finished_at=_iso(t.last_at or _parse_time(claimed_times.get("_claimed_finished_at")))
    )
    report.steps += written
    report.trajectories.append(sid)
    if t.meta.get("subagent"):
        report.subagents.append(sid)

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
- **Idempotent.** A trajectory's id derives from the format, the file's content hash and the trajectory's
  key in the file, so importing the same file again stores nothing new (``already_imported``); an
  interrupted import resumes (steps carry ``client_step_id = imp:<n>``). A changed file imports as a new
  trajectory whose ``parent_session_id`` is the previous import of the same session.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.trajectory import ImportProblem, ImportReport
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.formats import content_text
from agent_rl_sandbox.tools.formats.atif import AtifCall, decode_arguments, read_document
from agent_rl_sandbox.tools.store import TrajectoryRepository

IMPORT_FORMATS = ("atif", "claude_code", "codex", "openai_chat")
CHUNK = 1000
"""Steps written per transaction."""

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

    # builders
    def add(self, source: str, message: str, ts: Any = None, **extra: Any) -> dict:
        step: dict[str, Any] = {"source": source, "message": message, "extra": extra, "_results": {}}
        if isinstance(ts, str) and ts:
            step["timestamp"] = ts
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
        calls = step.setdefault("tool_calls", [])
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
        out, missing = [], 0
        for i, step in enumerate(self.steps):
            results = step.pop("_results")
            step.pop("_closed", None)
            calls = step.get("tool_calls") or []
            if not calls:
                step.pop("tool_calls", None)
            if calls and "observation" not in step:
                answered = [c for c in calls if c["tool_call_id"] in results]
                lost = [c["tool_call_id"] for c in calls if c["tool_call_id"] not in results]
                if answered:
                    step["observation"] = {
                        "results": [
                            {"source_call_id": c["tool_call_id"], "content": results[c["tool_call_id"]][0]}
                            for c in answered
                        ]
                    }
                errors = any(results[c["tool_call_id"]][1] for c in answered)
                codes = [results[c["tool_call_id"]][2] for c in answered if results[c["tool_call_id"]][2] is not None]
                if len(codes) == 1 and len(calls) == 1:
                    step["exit_code"] = codes[0]
                if any(c != 0 for c in codes):
                    errors = True
                if lost:
                    missing += len(lost)
                    step["extra"]["missing_result"] = True
                    step["extra"]["unanswered_call_ids"] = lost
                step.setdefault("outcome", "error" if (lost or errors) else "ok")
            step["provenance"] = "agent"
            step["client_step_id"] = f"imp:{i + 1}"
            out.append(step)
        return out, missing


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
    for n, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.strip()
        if not raw:
            continue
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
def _parse_atif(data: bytes, ctx: _Ctx) -> list[_Traj]:
    stripped = data.lstrip()
    docs: list[tuple[int, Any]]
    if stripped.startswith(b"{"):
        try:
            whole = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            whole = None
        if isinstance(whole, dict):
            ctx.report.lines = data.count(b"\n") + 1
            docs = [(1, whole)]
        else:
            docs = _lines(data, ctx)
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
    doc = read_document(raw)
    if doc.not_atif:
        ctx.problem(line, "not an ATIF trajectory: expected an object with a 'steps' list; skipped")
        return None
    for w in doc.warnings:
        ctx.warn(line, w.message, path=w.path)
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
    claimed = {f"claimed_{k}": extra[k] for k in ("reward", "passed", "self_report_only", "origin") if k in extra}
    t.meta.update(claimed)
    if extra.get("final_message"):
        t.meta["final_message"] = extra["final_message"]
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
        rl = s.rl
        if rl.get("provenance") not in (None, "agent"):
            sext["claimed_provenance"] = rl["provenance"]
        if rl.get("reward") is not None:
            sext["claimed_reward"] = rl["reward"]
        step = t.add(s.source, s.message, s.timestamp, **sext)
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
        loose = []
        for r in s.results:
            if r.source_call_id is None:
                loose.append({"source_call_id": None, "content": r.content})
            else:
                t.result(r.source_call_id, r.content)
        if loose and not step.get("tool_calls"):
            step["observation"] = {"results": loose}
        elif loose:
            ctx.warn(
                line,
                "observation results without source_call_id next to tool calls are kept in extra",
                path=f"{p}.observation",
            )
            step["extra"]["unpaired_results"] = [r["content"] for r in loose]
        outcome = rl.get("outcome")
        if outcome in ("ok", "error", "refused", "limit", "unknown") and not (
            step.get("tool_calls") and len(step["_results"]) < len(step["tool_calls"])
        ):
            step["outcome"] = outcome
    return t


def _atif_args(call: AtifCall, ctx: _Ctx, line: int, where: str) -> dict:
    """A call's arguments as the importer keeps them (the policy of :func:`_parse_args`)."""
    if call.arguments is None:
        return _parse_args(call.raw_arguments, ctx, line, where)
    if call.double_encoded:
        ctx.warn(line, "arguments are JSON-encoded twice; decoded", path=where)
    return call.arguments


# -- Claude Code transcripts ------------------------------------------------------------------------
_CC_SKIP_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation", "progress", "custom-title", "tag"})
_CC_LOCAL_COMMAND = re.compile(
    r"^\s*<(command-name|command-message|command-args|local-command-stdout|local-command-stderr)>"
)
_CC_INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]$")


def _parse_claude_code(data: bytes, ctx: _Ctx) -> list[_Traj]:
    t = _Traj(key="session", line=1, agent={"name": "claude-code"})
    msg_ids: dict[int, str] = {}  # id(step) -> assistant message id
    for n, obj in _lines(data, ctx):
        if not isinstance(obj, dict):
            ctx.problem(n, f"line is a JSON {type(obj).__name__}, not an object; skipped")
            continue
        typ = obj.get("type")
        if typ is None:
            ctx.warn(n, "line has no 'type'; skipped")
            ctx.skipped["untyped"] += 1
            continue
        if isinstance(obj.get("sessionId"), str) and t.external_id is None:
            t.external_id = f"claude-code:{obj['sessionId']}"
            t.key = obj["sessionId"]
            for k in ("cwd", "gitBranch"):
                if obj.get(k):
                    t.meta[k] = obj[k]
            if obj.get("version"):
                t.agent["version"] = obj["version"]
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
        if obj.get("isSidechain"):
            ctx.skipped["sidechain"] += 1
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            ctx.problem(n, f"{typ} line has no 'message' object; skipped")
            continue
        ts = obj.get("timestamp")
        content = message.get("content")
        if typ == "user":
            if obj.get("isMeta"):
                ctx.skipped["meta"] += 1
                continue
            blocks = (
                content
                if isinstance(content, list)
                else [{"type": "text", "text": content if isinstance(content, str) else ""}]
            )
            texts = []
            for b in blocks:
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
            if not text.strip():
                continue
            if _CC_LOCAL_COMMAND.match(text):
                ctx.skipped["local_command"] += 1
            elif _CC_INTERRUPT.match(text.strip()):
                t.add("system", text, ts, event="interrupt")
            else:
                t.add("user", text, ts)
            continue
        # assistant
        mid = message.get("id") or obj.get("uuid") or str(n)
        last = t.steps[-1] if t.steps else None
        if last is not None and last["source"] == "agent" and msg_ids.get(id(last)) == mid:
            step = last
        else:
            step = t.add("agent", "", ts)
            msg_ids[id(step)] = mid
        if isinstance(message.get("model"), str) and message["model"] != "<synthetic>":
            t.agent["model_name"] = message["model"]
        usage = message.get("usage")
        if isinstance(usage, dict):
            step["metrics"] = {
                "prompt_tokens": usage.get("input_tokens"),
                "completion_tokens": usage.get("output_tokens"),
                "cached_tokens": usage.get("cache_read_input_tokens"),
            }
        for j, b in enumerate(
            content if isinstance(content, list) else [{"type": "text", "text": content_text(content)}]
        ):
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt == "text" and isinstance(b.get("text"), str):
                step["message"] = (step["message"] + "\n\n" + b["text"]) if step["message"] else b["text"]
            elif bt == "thinking":
                step["extra"]["reasoning"] = (step["extra"].get("reasoning", "") + b.get("thinking", "")).strip()
            elif bt == "tool_use":
                if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str):
                    ctx.problem(n, "tool_use block without id or name; skipped", path=f"$.message.content[{j}]")
                    continue
                args = _parse_args(b.get("input"), ctx, n, f"$.message.content[{j}].input")
                problem = t.call(step, b["id"], b["name"], args)
                if problem:
                    t.errors.append(
                        ImportProblem(file=ctx.file, line=n, path=f"$.message.content[{j}]", message=problem)
                    )
            else:
                ctx.skipped[f"block:{bt}"] += 1
    if t.external_id is None:
        t.external_id = "claude-code:unknown"
    t.steps = [s for s in t.steps if s["message"] or s.get("tool_calls") or s["source"] != "agent" or s["extra"]]
    return [t] if (t.steps or t.errors) else []


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
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "output" in parsed:
        raw_meta = parsed.get("metadata")
        meta: dict = raw_meta if isinstance(raw_meta, dict) else {}
        code = meta.get("exit_code") if isinstance(meta.get("exit_code"), int) else None
        return content_text(parsed["output"]), code not in (None, 0), code
    m = _CODEX_EXIT.search(text)
    code = int(m.group(1)) if m else None
    return text, code not in (None, 0), code


def _parse_codex(data: bytes, ctx: _Ctx) -> list[_Traj]:
    t = _Traj(key="session", line=1, agent={"name": "codex"})
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
        if typ == "session_meta":
            if isinstance(payload.get("id"), str):
                t.key = payload["id"]
                t.external_id = f"codex:{payload['id']}"
            if payload.get("cli_version"):
                t.agent["version"] = str(payload["cli_version"])
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
def detect_format(path: Path, head: bytes) -> str | None:
    """Guess the format from the first JSON value of a file; ``None`` when unsure."""
    text = head.decode("utf-8", errors="replace").lstrip()
    if path.suffix == ".json" or (text.startswith("{") and "\n{" not in text[:200000].strip()):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("steps"), list):
            return "atif"
    for line in text.splitlines()[:20]:
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "schema_version" in obj and "steps" in obj:
            return "atif"
        if obj.get("type") in ("session_meta", "response_item", "turn_context", "event_msg") and "payload" in obj:
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
    if format is None:
        format = detect_format(path, data[:1_000_000])
        if format is None:
            raise ActionError(
                f"cannot tell the format of {path}",
                f"pass --format (one of {', '.join(IMPORT_FORMATS)})",
            )
    if format not in IMPORT_FORMATS:
        raise ActionError(f"unknown import format {format!r}", f"use one of {', '.join(IMPORT_FORMATS)}")
    sha = hashlib.sha256(data).hexdigest()
    report = ImportReport(file=str(path), format=format, sha256=sha)
    ctx = _Ctx(path, format, report)
    if format == "atif":
        parsed = _parse_atif(data, ctx)
    elif format == "claude_code":
        parsed = _parse_claude_code(data, ctx)
    elif format == "codex":
        parsed = _parse_codex(data, ctx)
    else:
        parsed = _parse_openai_chat(data, ctx, sha)
    redactions: Counter[str] = Counter()
    for t in parsed:
        _store_one(store, t, format, sha, path, report, redactions, task_lookup)
    report.skipped = dict(sorted(ctx.skipped.items()))
    report.redactions = dict(sorted(redactions.items()))
    if data.strip() and report.steps_seen == 0:
        ctx.problem(
            None, f"no steps imported from a non-empty {format} file (see the problems above, or check --format)"
        )
    return report


def _store_one(
    store: TrajectoryRepository,
    t: _Traj,
    fmt: str,
    sha: str,
    path: Path,
    report: ImportReport,
    redactions: Counter,
    task_lookup: TaskLookup | None,
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
    report.steps_seen += len(steps)
    report.missing_results += missing
    sid = _session_id(fmt, sha, t.key)
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
        agent, c = store.redactor.value(t.agent)
        redactions.update(c)
        meta = {"file": str(path), "sha256": sha, "line": t.line, "format": fmt, **t.meta}
        try:
            store.start(
                session_id=sid,
                agent=agent,
                task_id=t.task_id,
                behaviour=behaviour,
                split=split,
                origin=f"import:{fmt}",
                external_id=t.external_id,
                meta=meta,
                parent_session_id=parent,
            )
        except Exception:  # noqa: BLE001 - a concurrent import of the same file created it first
            if not store.exists(sid):
                raise
    written = 0
    for i in range(0, len(steps), CHUNK):
        res = store.log_steps(sid, steps[i : i + CHUNK])
        redactions.update(res.redactions)
        written += sum(res.created)
    final = next((s["message"] for s in reversed(steps) if s["source"] == "agent" and s["message"]), None)
    final = t.meta.get("final_message") or final
    if final:
        final, c = store.redactor.text(final)
        redactions.update(c)
    store.finish(sid, final_message=final)
    report.steps += written
    report.trajectories.append(sid)

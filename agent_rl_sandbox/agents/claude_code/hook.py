"""``agent-rl-sandbox hook claude-code``: record Claude Code hook events as ``hook`` steps.

Claude Code runs the command once per event with the event JSON on stdin (``hook_event_name``,
``session_id``, ``cwd``, ``transcript_path`` and the event's own fields; see the hooks reference). Each
process opens the store, records the event and exits. What it does per event:

``SessionStart``
    Finds or creates the trajectory for the Claude session (``external_id = claude-code:<session_id>``;
    a resumed session whose trajectory was finished gets a new one whose ``parent_session_id`` is the old
    one) and records a ``session_start`` system step.
``UserPromptSubmit``
    Closes the previous turn (see ``Stop``) and records the prompt as a user step.
``PreToolUse``
    Remembers the call (tool name, input, time) as a pending event keyed by ``tool_use_id``; no step yet.
``PostToolUse``
    Pairs with the pending call and records one step: the call and its result, read from
    ``tool_response`` (the field Claude Code uses; an event without it is *reported*, stored with outcome
    ``unknown`` and ``extra.hook_problem``, never as an empty observation).
``PostToolUseFailure``
    The same, with outcome ``error`` and the ``error`` text as the observation (Claude Code sends failures
    here, not to ``PostToolUse``).
``Stop``
    Marks the end of a turn, held pending: a Stop re-fired because another hook blocked the first one
    (``stop_hook_active: true``) updates the same pending end of turn, so a turn has one ``end_of_turn``
    step (``extra.stop_events`` counts the firings). It is written when the next prompt, session start
    or session end arrives, after any call that never got a result (recorded with outcome ``unknown``
    and ``extra.missing_result``).
``SessionEnd``
    Closes the turn, records a ``session_end`` system step and finishes the trajectory.
``PreCompact``, ``SubagentStop``
    Recorded as system steps (bookkeeping; exports leave them out).
``Notification`` and unknown events
    Ignored.

The same recorder serves Codex (:data:`CODEX`): its hook payloads use the same field names
(``hook_event_name``, ``session_id``, ``turn_id``, ``tool_use_id``, ``tool_input``, ``tool_response``,
``last_assistant_message``; see ``tests/agents/fixtures/codex/README.md``); it has no SessionEnd, so
its trajectory stays running and each turn's end carries the final message.

Only SessionStart and UserPromptSubmit open a new trajectory for a session whose trajectory is
finished (a resumed session); any other event that arrives after SessionEnd is reported and not
recorded (:class:`HookResult` ``late``), so it never opens a trajectory that nothing finishes.

The hook command itself never touches the store: it queues the event
(:mod:`agent_rl_sandbox.agents.hooks`) and the drainer calls :func:`record_event`
(:mod:`agent_rl_sandbox.agents._drain`). Each step's ``timestamp`` is the time the event was queued,
and steps carry client step ids derived from the queue id, so folding an event twice adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("agent_rl_sandbox.hook")


@dataclass(frozen=True)
class ClientSpec:
    """How one client's hook sessions are named in the store."""

    name: str
    """Agent name of its trajectories (``claude-code``, ``codex``)."""
    origin: str
    """Trajectory origin (``hook:<name>``)."""
    external_prefix: str
    """``external_id`` is this plus the client's ``session_id``."""
    step_prefix: str
    """Prefix of the client step ids its steps carry (``cc``, ``cx``)."""


CLAUDE_CODE = ClientSpec("claude-code", "hook:claude-code", "claude-code:", "cc")
CODEX = ClientSpec("codex", "hook:codex", "codex:", "cx")
CLIENTS = {c.name: c for c in (CLAUDE_CODE, CODEX)}
ORIGIN = CLAUDE_CODE.origin
EXTERNAL_PREFIX = CLAUDE_CODE.external_prefix
MAX_CONTENT_CHARS = 65_536
"""Longest tool result kept in a step (the rest is cut with a note; ``extra.response_chars`` has the size)."""
RESULT_FIELD = "tool_response"
"""Where Claude Code puts a tool's result in PostToolUse (not ``tool_result``/``tool_output``)."""
_OTHER_RESULT_FIELDS = ("tool_result", "tool_output", "output", "result", "response")
_EXIT_CODE = re.compile(r"\bExit code:?\s*(-?\d+)")
_IGNORED = frozenset({"Notification", "PermissionRequest"})
_HANDLED = frozenset(
    {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "StopFailure",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "PostCompact",
        "SessionEnd",
    }
)
_OPENING = frozenset({"SessionStart", "UserPromptSubmit"})
"""Events that may open a new trajectory for a session whose trajectory is finished (a resume)."""


@dataclass
class HookResult:
    """What one invocation did (for tests and logs)."""

    event: str | None = None
    session_id: str | None = None
    """The trajectory written to."""
    steps: list[int] = field(default_factory=list)
    """Step ids created."""
    problems: list[str] = field(default_factory=list)
    finished: bool = False
    late: bool = False
    """The event arrived after its session's trajectory was finished and was not recorded."""


def _now() -> str:
    from agent_rl_sandbox.tools.trajectories import utcnow

    return utcnow()


def _text_of(value: Any) -> str:
    """A tool response's text: MCP content blocks become their text (``content_text``); a response with
    no text parts is kept whole as canonical JSON."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, list)
        and all(isinstance(b, dict) for b in value)
        and any(isinstance(b.get("text"), str) for b in value)
    ):
        from agent_rl_sandbox.tools.formats import content_text

        return content_text(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _cap(text: str, extra: dict) -> str:
    if len(text) > MAX_CONTENT_CHARS:
        extra["response_chars"] = len(text)
        return text[:MAX_CONTENT_CHARS] + f"\n[... cut: {len(text) - MAX_CONTENT_CHARS} more characters]"
    return text


def response_content(resp: Any) -> tuple[str, str, int | None]:
    """``(content, outcome, exit_code)`` of a ``tool_response``: Bash's ``stdout``/``stderr``/``interrupted``,
    ``success: false`` or ``is_error`` mark an error; MCP content blocks become their text."""
    if isinstance(resp, dict):
        if "stdout" in resp or "stderr" in resp:
            out, err = str(resp.get("stdout") or ""), str(resp.get("stderr") or "")
            content = out + (f"\n--- stderr ---\n{err}" if err else "")
            bad = bool(resp.get("interrupted"))
            return content, "error" if bad else "ok", None
        bad = resp.get("success") is False or resp.get("is_error") is True or resp.get("isError") is True
        return _text_of(resp), "error" if bad else "ok", None
    return _text_of(resp), "ok", None


def _tool_key(event: dict) -> tuple[str, str]:
    """Pending-event key and tool call id: ``tool_use_id`` when present (Claude Code sends it on every
    tool event), else a digest of tool name and input that the pre and post events share."""
    tid = event.get("tool_use_id")
    if isinstance(tid, str) and tid:
        return f"tool:{tid}", tid
    digest = hashlib.sha256(
        json.dumps([event.get("tool_name"), event.get("tool_input")], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    return f"tool:{digest}", f"hook_{digest}"


def _args(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    return {} if value is None else {"input": value}


class _Recorder:
    def __init__(self, pending, event: dict, result: HookResult, client: ClientSpec, qid: str | None, at: str):
        self.p = pending
        self.ev = event
        self.res = result
        self.client = client
        self.qid = qid
        self.at = at
        self.pre = client.step_prefix

    def _cid(self, kind: str) -> dict[str, str]:
        """A client step id for a step that has no natural one (prompt, system step): from the queue id."""
        return {"client_step_id": f"{self.pre}-{kind}:{self.qid}"} if self.qid else {}

    def append(self, *steps: dict) -> list[tuple[Any, bool]]:
        for s in steps:
            s["provenance"] = "hook"
            s.setdefault("timestamp", self.at)
        out = self.p.append(list(steps))
        self.res.steps.extend(s.step_id for s, created in out if created)
        return out

    def system(self, event: str, message: str = "", **extra: Any) -> None:
        self.append({"source": "system", "message": message, "extra": {"event": event, **extra}, **self._cid("sys")})

    # -- turn bookkeeping -------------------------------------------------------------------------
    def flush(self) -> None:
        """Write what the finished turn left pending: calls that never got a result, then the turn's end."""
        for key, _kind, data in self.p.items("tool"):
            call_id = data.get("call_id") or key
            self.append(
                {
                    "source": "agent",
                    "message": "",
                    "tool_calls": [
                        {
                            "tool_call_id": call_id,
                            "function_name": data.get("tool_name") or "unknown",
                            "arguments": _args(data.get("tool_input")),
                        }
                    ],
                    "outcome": "unknown",
                    "extra": {
                        "event": "tool_use",
                        "missing_result": True,
                        "started_at": data.get("started_at"),
                        "reason": "PreToolUse without PostToolUse or PostToolUseFailure",
                    },
                    "client_step_id": f"{self.pre}-tool:{call_id}",
                }
            )
            self.p.pop(key)
        stop = self.p.pop("stop")
        if stop is not None:
            message = stop.get("last_assistant_message") or ""
            self.append(
                {
                    "source": "agent",
                    "message": message,
                    "extra": {
                        "event": "end_of_turn",
                        "stop_events": stop.get("count", 1),
                        "stop_hook_active_seen": bool(stop.get("active_seen")),
                        **(
                            {"final_message_from": stop["final_message_from"]} if stop.get("final_message_from") else {}
                        ),
                    },
                    "client_step_id": f"{self.pre}-stop:{stop.get('first_at')}",
                }
            )
            if message:
                self.p.put("final", "meta", {"message": message})

    # -- events -----------------------------------------------------------------------------------
    def SessionStart(self) -> None:  # noqa: N802 - named after the event
        self.flush()
        self.system("session_start", source=self.ev.get("source"), model=self.ev.get("model"), cwd=self.ev.get("cwd"))

    def UserPromptSubmit(self) -> None:  # noqa: N802
        self.flush()
        prompt = self.ev.get("prompt")
        if not isinstance(prompt, str):
            self.res.problems.append("UserPromptSubmit without a prompt string")
            return
        extra = {"event": "user_prompt"}
        if isinstance(self.ev.get("turn_id"), str):
            extra["turn_id"] = self.ev["turn_id"]
        self.append({"source": "user", "message": prompt, "extra": extra, **self._cid("prompt")})

    def PreToolUse(self) -> None:  # noqa: N802
        key, call_id = _tool_key(self.ev)
        self.p.put(
            key,
            "tool",
            {
                "call_id": call_id,
                "tool_name": self.ev.get("tool_name"),
                "tool_input": self.ev.get("tool_input"),
                "started_at": self.at,
                "permission_mode": self.ev.get("permission_mode"),
            },
        )

    def PostToolUse(self) -> None:  # noqa: N802
        self._post(failed=False)

    def PostToolUseFailure(self) -> None:  # noqa: N802
        self._post(failed=True)

    def _post(self, *, failed: bool) -> None:
        ev = self.ev
        key, call_id = _tool_key(ev)
        pre = self.p.pop(key)
        name = ev.get("tool_name") or (pre or {}).get("tool_name") or "unknown"
        args = _args(ev["tool_input"] if "tool_input" in ev else (pre or {}).get("tool_input"))
        extra: dict[str, Any] = {
            "event": "tool_use",
            "hook_event": ev.get("hook_event_name"),
            "paired_pre": pre is not None,
        }
        if pre is not None:
            extra["started_at"] = pre.get("started_at")
        if isinstance(ev.get("duration_ms"), int | float):
            extra["duration_ms"] = ev["duration_ms"]
        step: dict[str, Any] = {
            "source": "agent",
            "message": "",
            "tool_calls": [{"tool_call_id": call_id, "function_name": name, "arguments": args}],
            "client_step_id": f"{self.pre}-tool:{call_id}",
            "extra": extra,
        }
        if failed:
            err = ev.get("error")
            if err is None:
                self.res.problems.append("PostToolUseFailure without an error field")
            content = _cap(_text_of(err) if err is not None else "", extra)
            m = _EXIT_CODE.search(content)
            if m:
                step["exit_code"] = int(m.group(1))
            if ev.get("is_interrupt"):
                extra["interrupted"] = True
            step["outcome"] = "error"
            step["observation"] = {"results": [{"source_call_id": call_id, "content": content}]}
        elif ev.get(RESULT_FIELD) is None:
            found = [k for k in _OTHER_RESULT_FIELDS if k in ev]
            msg = f"PostToolUse for {name} ({call_id}) has no {RESULT_FIELD}" + (
                f"; it has {', '.join(found)}, which Claude Code does not use for results" if found else ""
            )
            self.res.problems.append(msg)
            extra["hook_problem"] = msg
            extra["missing_result"] = True
            step["outcome"] = "unknown"
        else:
            content, outcome, code = response_content(ev[RESULT_FIELD])
            step["outcome"] = outcome
            if code is not None:
                step["exit_code"] = code
            step["observation"] = {"results": [{"source_call_id": call_id, "content": _cap(content, extra)}]}
        ((stored, created),) = self.append(step)
        if not created and stored.extra.get("missing_result") and step.get("observation"):
            # The pre was already written as "no result" (its turn ended first); keep the late result too.
            step["client_step_id"] = f"{self.pre}-late:{call_id}"
            step["extra"] = {**extra, "late_result_for_step": stored.step_id}
            self.append(step)

    def Stop(self) -> None:  # noqa: N802
        cur = self.p.get("stop") or {"count": 0, "first_at": self.at, "active_seen": False}
        cur["count"] = int(cur.get("count", 0)) + 1
        if self.ev.get("stop_hook_active"):
            cur["active_seen"] = True
        msg = self.ev.get("last_assistant_message")
        if isinstance(msg, str) and msg:
            cur["last_assistant_message"] = msg
            cur["final_message_from"] = self.ev.get("final_message_from")
        self.p.put("stop", "stop", cur)

    def StopFailure(self) -> None:  # noqa: N802 - Codex: the turn ended on an error
        self.system(
            "stop_failure", error=self.ev.get("error"), last_assistant_message=self.ev.get("last_assistant_message")
        )

    def SubagentStart(self) -> None:  # noqa: N802
        self.system("subagent_start", agent_type=self.ev.get("agent_type"), agent_id=self.ev.get("agent_id"))

    def PostCompact(self) -> None:  # noqa: N802
        self.system("post_compact", trigger=self.ev.get("trigger"))

    def SubagentStop(self) -> None:  # noqa: N802
        self.system(
            "subagent_stop",
            agent_type=self.ev.get("agent_type"),
            agent_id=self.ev.get("agent_id"),
            last_assistant_message=self.ev.get("last_assistant_message"),
        )

    def PreCompact(self) -> None:  # noqa: N802
        self.system("pre_compact", trigger=self.ev.get("trigger"))

    def SessionEnd(self) -> None:  # noqa: N802
        self.flush()
        msg = self.ev.get("last_assistant_message")
        if isinstance(msg, str) and msg and self.p.get("final") is None:
            self.p.put("final", "meta", {"message": msg})  # no Stop carried it: from the transcript
        self.system("session_end", reason=self.ev.get("reason"))


def record_event(
    store, event: dict, *, client: ClientSpec = CLAUDE_CODE, qid: str | None = None, at: str | None = None
) -> HookResult:
    """Record one parsed hook event of ``client`` in ``store`` (a :class:`~agent_rl_sandbox.tools.store.Store`).

    ``qid`` (the queue id) makes a repeated fold add nothing; ``at`` (ISO-8601, when the event was
    queued; default now) is the timestamp of the steps it makes. Raises on store errors (the drainer
    keeps the event queued)."""
    at = at or _now()
    res = HookResult(event=event.get("hook_event_name"))
    name, csid = event.get("hook_event_name"), event.get("session_id")
    if name in _IGNORED:
        return res
    if name not in _HANDLED:
        res.problems.append(f"unknown hook event {name!r}; ignored")
        return res
    if not isinstance(csid, str) or not csid:
        res.problems.append(f"{name} event without session_id; ignored")
        return res
    agent = {"name": client.name}
    if isinstance(event.get("model"), str):
        agent["model_name"] = event["model"]
    meta = {k: event[k] for k in ("cwd", "transcript_path") if isinstance(event.get(k), str)}
    trajectories = store.trajectories
    summary, created = trajectories.start_or_resume_external(
        client.external_prefix + csid, agent=agent, origin=client.origin, meta=meta, reopen=name in _OPENING
    )
    res.session_id = summary.session_id
    if summary.status != "running":
        res.late = True
        res.problems.append(
            f"{name} for {client.name} session {csid} arrived after its trajectory {summary.session_id} finished"
            " (after SessionEnd); not recorded"
        )
        return res
    if not created and "model_name" in agent and summary.agent.model_name != agent["model_name"]:
        trajectories.update_meta(summary.session_id, agent={**summary.agent.model_dump(exclude_none=True), **agent})
    final = None
    with store.hook_events.transaction(summary.session_id) as p:
        getattr(_Recorder(p, event, res, client, qid, at), name)()
        if name == "SessionEnd":
            final = (p.pop("final") or {}).get("message")
            for key, _kind, _data in p.items():
                p.pop(key)
    if name == "SessionEnd":
        trajectories.finish(summary.session_id, final_message=final)
        res.finished = True
    return res

"""Score a Port Daddy suite file on plain data, streaming the file and the report (no size cap).

:func:`score_suite_to` writes the same report bytes as ``score FILE --json`` through the model-based
path (``tools.evals._port_daddy.score_suite`` and ``tools.evals._report.report_json_bytes``) for the
suites it accepts, with none of its cost: no pydantic (the suite is checked and scored as the dicts
orjson parses), one scoring pass, and the report written piece by piece. Memory stays well below the
file's size: the file is read in chunks (:class:`_Splitter` hands ``tasks`` and ``trajectories`` to
orjson a megabyte at a time), each trajectory's report and each task's row are written to a spool
(in memory while small, a temporary file beyond :data:`SPOOL_MEMORY_BYTES`) as soon as they are
scored, only ids and a few numbers per trajectory and per task are kept for the sort and the
statistics, and in a file over :data:`COMPACT_TASKS_BYTES` each task is kept as its JSON text
(spooled too) and rebuilt when a trajectory names it (about 12% slower; 188 MiB peak RSS for a
250 MB suite, against Node's 1.5 GiB).

It accepts only suites it can score exactly as the model path does, and declines (raises
:class:`Declined`, before writing anything) every other input, which then goes the usual way with its
usual findings and error messages:

- any input the suite validator (``tools.datasets``, ``_suite``) would report an error for, and more:
  each value must have the plain JSON type of its field (a float ``exitCode`` such as ``0.0``, which
  pydantic reads as ``0``, is declined; so are snake_case spellings of the camelCase keys);
- a signed suite (``exportSignature``), a trajectory carrying ``storeScore`` or a ``store_verdict``
  artifact (the trust rule of ``tools.evals._harness.score_suite_document``);
- a lone surrogate escape (orjson refuses it; the validator reports it), NaN or Infinity, invalid
  UTF-8 or JSON, a repeated ``tasks`` or ``trajectories`` key, more than one document (text holding
  integers of 19 or more digits is read by the json module, not orjson, which reads those beyond 64
  bits as floats; such text must hold no surrogate escape at all);
- values nested as deep as the validator's limit (``tools.datasets._params.MAX_DEPTH``).

Semantics are those of ``tools.evals._port_daddy`` (its module docstring), with its JavaScript
readings shared through :mod:`agent_rl_sandbox.tools._jsvalue`; the report's layout is that of
``json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False)`` (:mod:`._jsonout`). Tests:
``tests/tools/evals/test_suite_fast.py`` (golden reports, chunk sizes, declines, flat memory).
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring as _quote  # the C encoder json.dumps uses
from typing import Any, BinaryIO

import orjson

from agent_rl_sandbox.tools._claims import ERROR_TEXT, success_claims
from agent_rl_sandbox.tools._jsonout import dumps_indented
from agent_rl_sandbox.tools._jsvalue import FINAL_TEXT_FIELDS, final_state_text, js_json, js_number, js_string, round3
from agent_rl_sandbox.tools._nesting import nested_deeper_than

CHUNK_BYTES = 1024 * 1024
"""Bytes of the file read (and handed to orjson) at a time."""
SPOOL_MEMORY_BYTES = 48 * 1024 * 1024
"""Report pieces kept in memory up to this total; beyond, they go to a temporary file."""
COMPACT_TASKS_BYTES = 128 * 1024 * 1024
"""Files larger than this keep each task as its JSON text (spooled), rebuilt when a trajectory needs it."""
TASK_CACHE = 4096
"""Tasks rebuilt in compact mode kept for the next trajectories (the cache is emptied when full)."""
MAX_DEPTH = 32
"""The validator's nesting limit (``tools.datasets._params.MAX_DEPTH``; a test checks they agree)."""

SUGGESTED_UNHOOKS = [
    "reset sandbox fixture",
    "revert workspace snapshot",
    "disable adapter and fall back to base model",
    "drop generated trajectories that cannot be replayed deterministically",
]
_ARTIFACT_TEXT = ("kind", "name", "path", "status", "command", "content", "output", "stdout", "stderr")
_CHOSEN = "trajectory satisfied expected tool and artifact-backed evidence contract"
_REJECTED = "trajectory missed an expected action, artifact-backed evidence, or relied on self-report"
_SELF_WARNING = "only the finalState (the agent's own report) supports the expected evidence"
_MIN_REPEATS = 3  # tools.evals._loops.DEFAULT_MIN_REPEATS
_MALFORMED_TOOL = "invalid_tool_call"  # tools.evals._actions.MALFORMED_TOOL
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_WS = b" \t\n\r"


class Declined(Exception):
    """This scorer does not take the input (see the module docstring); score it the usual way."""


# --------------------------------------------------------------------------------------------
# Checking plain values (what the validator and the suite model accept, narrowed)
# --------------------------------------------------------------------------------------------


def _extras(obj: dict, known: frozenset, forbidden: frozenset, depth: int) -> None:
    """Decline a snake_case (or internal) key; check the nesting of the keys the model keeps as extras."""
    for k, v in obj.items():
        if k in known:
            continue
        if k in forbidden:
            raise Declined(k)
        tv = type(v)
        if (tv is dict or tv is list) and nested_deeper_than(v, MAX_DEPTH, depth + 1):
            raise Declined("too deep")


def _opt_str(obj: dict, key: str) -> None:
    v = obj.get(key)
    if v is not None and type(v) is not str:
        raise Declined(key)


def _str_list(v: Any) -> list:
    if type(v) is not list:
        raise Declined("list")
    for s in v:
        if type(s) is not str:
            raise Declined("str")
    return v


def _number(v: Any) -> float:
    """A finite, non-negative JSON number, as pydantic's ``float`` field with ``ge=0`` reads it."""
    t = type(v)
    if t is int:
        if not 0 <= v < 2**63:
            raise Declined("number")
        return float(v)
    if t is float and 0.0 <= v < float("inf"):
        return v
    raise Declined("number")


def _exit_code(obj: dict) -> int | None:
    if "exitCode" not in obj:
        return None
    v = obj["exitCode"]
    if type(v) is not int:
        raise Declined("exitCode")  # null is a finding; 0.0 is read as 0 by pydantic: the usual way
    return v


_EXP_ACTION = frozenset({"tool", "argsContains"})
_EXP_ACTION_NO = frozenset({"args_contains"})
_EXP_EVIDENCE = frozenset({"kind", "contains", "exitCode", "status"})
_EXP_EVIDENCE_NO = frozenset({"exit_code"})
_FAILURE = frozenset({"name", "clearWhenContains"})
_FAILURE_NO = frozenset({"clear_when_contains", "bare"})
_TASK = frozenset(
    {
        "id",
        "instruction",
        "expectedActions",
        "expectedEvidence",
        "expectedFinalContains",
        "expectedFinalKind",
        "passReward",
        "failureModes",
    }
)
_TASK_NO = frozenset(
    {
        "expected_actions",
        "expected_evidence",
        "expected_final_contains",
        "expected_final_kind",
        "pass_reward",
        "failure_modes",
    }
)
_TRAJ = frozenset({"taskId", "id", "sessionId", "actions", "artifacts", "finalState"})
_TRAJ_NO = frozenset({"task_id", "session_id", "final_state", "storeScore"})
_ACTION = frozenset({"tool", "args"})
_ARTIFACT = frozenset({*_ARTIFACT_TEXT, "exitCode"})
_ARTIFACT_NO = frozenset({"exit_code"})
_UNHOOK = frozenset({"name", "command", "procedure", "validated"})
_UNHOOK_NO = frozenset({"bare"})
_TOP = frozenset({"agent", "rewardSpec", "tasks", "trajectories", "unhooks"})
_TOP_NO = frozenset({"reward_spec", "exportSignature", "steps"})
_SPEC = ("actionOrderRequired", "defaultPassReward", "requireValidatedUnhooksForDeployment")


class _Task:
    """One task, checked and prepared for scoring."""

    __slots__ = ("actions", "evidence", "failures", "final_kind", "final_needles", "id", "instruction", "threshold")

    def __init__(self, t: Any, default_pass: float):
        if type(t) is not dict:
            raise Declined("task")
        tid = t.get("id")
        if type(tid) is not str or not tid:
            raise Declined("id")
        self.id: str = tid
        _opt_str(t, "instruction")
        self.instruction = t.get("instruction")
        actions = []
        raw_actions = t["expectedActions"] if "expectedActions" in t else []
        if type(raw_actions) is not list:
            raise Declined("expectedActions")
        for e in raw_actions:
            if type(e) is not dict:
                raise Declined("expectedAction")
            tool = e.get("tool")
            if type(tool) is not str or not tool:
                raise Declined("tool")
            needles = _str_list(e["argsContains"]) if "argsContains" in e else []
            if not e.keys() <= _EXP_ACTION:
                _extras(e, _EXP_ACTION, _EXP_ACTION_NO, 4)
            actions.append((tool, needles))
        self.actions = actions
        final: Any = t.get("expectedFinalContains")
        # Port Daddy: a falsy expectedFinalContains (absent, null or "") is no check; [""] is one
        self.final_needles: list[str] | None
        if final is None or type(final) is str:
            self.final_needles = [final] if final else None
        elif type(final) is list and len(final) == 1 and type(final[0]) is str:
            self.final_needles = list(final)
        else:
            raise Declined("expectedFinalContains")
        _opt_str(t, "expectedFinalKind")
        self.final_kind = t.get("expectedFinalKind")
        evidence = []
        raw_ev = t["expectedEvidence"] if "expectedEvidence" in t else []
        if type(raw_ev) is not list:
            raise Declined("expectedEvidence")
        for e in raw_ev:
            if type(e) is not dict:
                raise Declined("expectedEvidence item")
            _opt_str(e, "kind")
            _opt_str(e, "status")
            contains = _str_list(e["contains"]) if "contains" in e else []
            code = _exit_code(e)
            if not e.keys() <= _EXP_EVIDENCE:
                _extras(e, _EXP_EVIDENCE, _EXP_EVIDENCE_NO, 4)
            want = js_number(code) if code is not None else None
            evidence.append((e.get("kind"), contains, code, e.get("status"), False, want))
        if not evidence and self.final_needles is not None:
            evidence.append((self.final_kind, self.final_needles, None, None, True, None))
        self.evidence = evidence
        if "passReward" in t and t["passReward"] is not None:
            self.threshold = _number(t["passReward"])
        else:
            self.threshold = default_pass
        failures: list[tuple[str, Any]] = []
        raw_fm = t["failureModes"] if "failureModes" in t else []
        if type(raw_fm) is not list:
            raise Declined("failureModes")
        for fm in raw_fm:
            if type(fm) is str:
                failures.append(("__never__", fm))
            elif type(fm) is dict:
                _opt_str(fm, "name")
                _opt_str(fm, "clearWhenContains")
                if not fm.keys() <= _FAILURE:
                    _extras(fm, _FAILURE, _FAILURE_NO, 4)
                failures.append((fm.get("clearWhenContains") or "__never__", fm))
            else:
                raise Declined("failureMode")
        self.failures = failures
        if not t.keys() <= _TASK:
            _extras(t, _TASK, _TASK_NO, 2)


def _check_trajectory(tr: Any) -> tuple[str, list, list]:
    """``(taskId, actions, artifacts)`` of a checked trajectory. The common shape (no keys beyond
    the model's) takes a shorter way through the same checks."""
    if type(tr) is not dict:
        raise Declined("trajectory")
    tid = tr.get("taskId")
    if type(tid) is not str or not tid:
        raise Declined("taskId")
    v = tr.get("id")
    if v is not None and type(v) is not str:
        raise Declined("id")
    v = tr.get("sessionId")
    if v is not None and type(v) is not str:
        raise Declined("sessionId")
    actions = tr.get("actions", _NONE)
    if type(actions) is not list:
        raise Declined("actions")
    for a in actions:
        if type(a) is not dict:
            raise Declined("action")
        tool = a.get("tool")
        if type(tool) is not str or not tool:
            raise Declined("tool")
        if "args" in a:
            args = a["args"]
            if type(args) is not dict:
                raise Declined("args")
            for v in args.values():
                if type(v) in _CONTAINERS and nested_deeper_than(v, MAX_DEPTH, 6):
                    raise Declined("too deep")
        if not a.keys() <= _ACTION:
            _extras(a, _ACTION, frozenset(), 4)
    artifacts = tr.get("artifacts", _NONE)
    if type(artifacts) is not list:
        raise Declined("artifacts")
    for art in artifacts:
        if type(art) is not dict:
            raise Declined("artifact")
        if art.keys() <= _ARTIFACT:
            for k, v in art.items():
                if k == "exitCode":
                    if type(v) is not int:
                        raise Declined("exitCode")  # null is a finding; 0.0 is read as 0 by pydantic
                elif v is not None and type(v) is not str:
                    raise Declined(k)
        else:
            for k in _ARTIFACT_TEXT:
                v = art.get(k)
                if v is not None and type(v) is not str:
                    raise Declined(k)
            _exit_code(art)
            _extras(art, _ARTIFACT, _ARTIFACT_NO, 4)
        if art.get("kind") == "store_verdict":
            raise Declined("store_verdict")
    final = tr.get("finalState")
    if type(final) in _CONTAINERS and nested_deeper_than(final, MAX_DEPTH, 3):
        raise Declined("too deep")
    if not tr.keys() <= _TRAJ:
        _extras(tr, _TRAJ, _TRAJ_NO, 2)
    if actions is _NONE or artifacts is _NONE:
        return tid, actions if actions is not _NONE else [], artifacts if artifacts is not _NONE else []
    return tid, actions, artifacts


_NONE: list = []  # a shared empty default, never handed out (see _check_trajectory's return)
_CONTAINERS = (dict, list)


def _check_top(doc: dict) -> tuple[bool, float, bool, Any, list]:
    """``(order required, default pass reward, unhooks required, agent, unhooks)`` of the small keys."""
    spec = doc.get("rewardSpec", {})
    if type(spec) is not dict or any(k not in _SPEC for k in spec):
        raise Declined("rewardSpec")
    order = spec.get("actionOrderRequired", True)
    need_unhooks = spec.get("requireValidatedUnhooksForDeployment", True)
    if type(order) is not bool or type(need_unhooks) is not bool:
        raise Declined("flag")
    default_pass = _number(spec["defaultPassReward"]) if "defaultPassReward" in spec else 1.0
    agent = doc.get("agent")
    ta = type(agent)
    if agent is not None and ta is not str and ta is not dict:
        raise Declined("agent")
    if ta is dict and nested_deeper_than(agent, MAX_DEPTH, 1):
        raise Declined("too deep")
    unhooks = doc.get("unhooks", [])
    if type(unhooks) is not list:
        raise Declined("unhooks")
    for u in unhooks:
        if type(u) is dict:
            for k in ("name", "command", "procedure"):
                _opt_str(u, k)
            if "validated" in u and type(u["validated"]) is not bool:
                raise Declined("validated")
            _extras(u, _UNHOOK, _UNHOOK_NO, 2)
        elif type(u) is not str:
            raise Declined("unhook")
    for k, v in doc.items():
        if k in _TOP_NO:
            raise Declined(k)
        tv = type(v)
        if k not in _TOP and (tv is dict or tv is list) and nested_deeper_than(v, MAX_DEPTH, 1):
            raise Declined("too deep")
    return order, default_pass, need_unhooks, agent, unhooks


def _validated_unhooks(unhooks: list) -> list:
    return [
        u
        for u in unhooks
        if type(u) is dict and u.get("name") and (u.get("command") or u.get("procedure")) and u.get("validated") is True
    ]


# --------------------------------------------------------------------------------------------
# Scoring one trajectory against one task (tools.evals._port_daddy._Scored on plain data)
# --------------------------------------------------------------------------------------------

_ROUND3: dict[tuple[int, int], float] = {}


def _reward(earned: int, possible: int) -> float:
    key = (earned, possible)
    r = _ROUND3.get(key)
    if r is None:
        r = _ROUND3[key] = round3(earned / possible)
    return r


_INDEX_START = frozenset("0123456789")


def _js_json(value: Any) -> str:
    """``_jsvalue.js_json`` (``JSON.stringify``), with a shortcut for the common shapes: strings
    hold no lone surrogate here (orjson refuses them in the input), so they need no re-escaping,
    and an object none of whose keys starts with a digit keeps its key order. Anything else goes
    to ``js_json`` itself. For the same reason ``needle in hay`` is ``js_includes`` here."""
    t = type(value)
    if t is str:
        return _quote(value)
    if t is dict:
        parts = []
        for k, v in value.items():
            if k[:1] in _INDEX_START:
                return js_json(value)
            parts.append(_quote(k) + ":" + (_quote(v) if type(v) is str else _js_json(v)))
        return "{" + ",".join(parts) + "}"
    if t is list:
        return "[" + ",".join([_quote(v) if type(v) is str else _js_json(v) for v in value]) + "]"
    return js_json(value)


def _final_text(final: Any) -> tuple[str, str | None]:
    """``_jsvalue.final_state_text``, with the common cases (a string, an object of strings) inline."""
    if final is None:
        return "", None
    tf = type(final)
    if tf is str:
        return final, None
    if tf is dict:
        parts = []
        for k in FINAL_TEXT_FIELDS:
            v = final.get(k)
            if v is None:
                continue
            if type(v) is str:
                parts.append(v)
            elif isinstance(v, (int, float)):  # bool too, as final_state_text reads it: "true"
                parts.append(js_string(v))
        kind = final.get("kind")
        return "\n".join(parts), kind if type(kind) is str else None
    return final_state_text(final)


_CLAIMS: dict[str, list[str]] = {}


def _claims(text: str) -> list[str]:
    """``success_claims(text)``, remembered: agents repeat their final messages (cache of 10,000)."""
    got = _CLAIMS.get(text)
    if got is None:
        if len(_CLAIMS) >= 10_000:
            _CLAIMS.clear()
        got = _CLAIMS[text] = success_claims(text)
    return got


def _args_json(args: Any) -> str:
    """``tools.evals._actions.actions_of``'s canonical arguments text."""
    try:
        return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return "{}"


def _call_failed(a: dict) -> bool:
    """``tools.evals._loops.call_failed`` of a suite action as ``_port_daddy._steps_of`` builds it."""
    if a["tool"] == _MALFORMED_TOOL or a.get("error") or a.get("status") in ("error", "failed"):
        return True
    code = a.get("exitCode")
    if type(code) is int:
        return code != 0
    text = "\n".join(str(a[k]) for k in ("error", "output", "result") if isinstance(a.get(k), str))
    return bool(text) and bool(ERROR_TEXT.search(text))


def _loops(actions: list) -> list:
    """``find_loops(actions_of(_steps_of(actions)))`` as plain dicts (``LoopFinding`` fields)."""
    run = 1
    for prev, cur in zip(actions, actions[1:], strict=False):
        run = run + 1 if cur["tool"] == prev["tool"] and cur.get("args", {}) == prev.get("args", {}) else 1
        if run >= _MIN_REPEATS:
            break
    else:
        return []  # no three equal calls in a row: no loop (tools.evals._port_daddy._may_loop)
    found: list = []
    seq: list = []  # (step id, tool, args text) of the current run of equal failing calls

    def close() -> None:
        if len(seq) >= _MIN_REPEATS:
            found.append(
                {"tool": seq[0][1], "args": seq[0][2][:200], "step_ids": [s[0] for s in seq], "repeats": len(seq)}
            )

    for i, a in enumerate(actions):
        failed = _call_failed(a)
        args = a.get("args", {})
        here = (i + 1, a["tool"], _args_json(args if isinstance(args, dict) else {}))
        if seq and failed and here[1] == seq[-1][1] and here[2] == seq[-1][2]:
            seq.append(here)
            continue
        close()
        seq = [here] if failed else []
    close()
    return found


class _Scored:
    """A trajectory (plain dict, or ``None`` for none) scored against a :class:`_Task`."""

    __slots__ = (
        "action_results",
        "evidence_index",
        "evidence_results",
        "final_text",
        "loops_of",
        "passed",
        "reward",
        "row",
        "self_report_only",
        "task",
    )

    def __init__(self, task: _Task, actions: list, artifacts: list, traj: dict | None, order: bool):
        self.task = task
        action_results: list[dict[str, Any]] = []
        earned = 0
        if task.actions:
            hays: dict[int, str] = {}
            cursor = -1
            n = len(actions)
            for tool, needles in task.actions:
                idx = -1
                for i in range(cursor + 1 if order else 0, n):
                    a = actions[i]
                    if a["tool"] != tool:
                        continue
                    hay = hays.get(i)
                    if hay is None:
                        hay = hays[i] = _js_json(a.get("args", {}))
                    if all(s in hay for s in needles):
                        idx = i
                        break
                if order and idx >= 0:
                    cursor = idx
                if idx >= 0:
                    earned += 1
                action_results.append(
                    {"tool": tool, "matched": idx >= 0, "matchedIndex": idx, "argsContains": list(needles)}
                )
        evidence_results: list[dict[str, Any]] = []
        evidence_index: list[int] = []
        any_evidence = False
        for kind, contains, code, status, from_final, want in task.evidence:
            idx = -1
            for i, art in enumerate(artifacts):
                if kind and art.get("kind") != kind:
                    continue
                if want is not None:
                    ac = art.get("exitCode")
                    if ac is None or js_number(ac) != want:
                        continue
                if status and art.get("status") != status:
                    continue
                text = "\n".join([v for f in _ARTIFACT_TEXT if (v := art.get(f)) is not None])
                if all(s in text for s in contains):
                    idx = i
                    break
            evidence_index.append(idx)
            res: dict[str, Any] = {"kind": kind or "any", "contains": list(contains), "matched": idx >= 0}
            if code is not None:
                res["exitCode"] = code
            if status is not None:
                res["status"] = status
            if from_final:
                res["fromFinalContains"] = True
            if idx >= 0:
                earned += 1
                any_evidence = True
            evidence_results.append(res)
        possible = len(action_results) + len(evidence_results)
        reward = 1.0 if possible == 0 else _reward(earned, possible)
        passed = reward >= task.threshold
        text, kind_final = _final_text(traj.get("finalState") if traj is not None else None)
        final_check = None
        if task.final_needles is not None or task.final_kind:
            needles = task.final_needles or []
            ok = all(s in text for s in needles) and (not task.final_kind or kind_final == task.final_kind)
            final_check = {"contains": needles, "matched": bool(text) and ok}
            if task.final_kind is not None:
                final_check["kind"] = task.final_kind
        support = any(s in text for r in evidence_results for s in r["contains"]) or bool(
            final_check and final_check["matched"]
        )
        self_report_only = not any_evidence and support
        failures: list = []
        if task.failures:
            hay = _js_json(traj.get("artifacts", []) if traj is not None else [])
            failures = [out for clear, out in task.failures if clear not in hay]
        row: dict[str, Any] = {
            "taskId": task.id,
            "reward": reward,
            "pass": passed,
            "actionResults": action_results,
            "evidenceResults": evidence_results,
            "selfReportOnly": self_report_only,
            "failureModes": failures,
        }
        if task.instruction is not None:
            row["instruction"] = task.instruction
        if final_check is not None:
            row["finalCheck"] = final_check
        self.row = row
        self.reward = reward
        self.passed = passed
        self.self_report_only = self_report_only
        self.action_results = action_results
        self.evidence_results = evidence_results
        self.evidence_index = evidence_index
        self.final_text = text
        self.loops_of = actions

    def native(self, session_id: str) -> dict:
        """``ScoreReport`` of ``_port_daddy._Scored.score_report`` as a dict."""
        crits = []
        for i, r in enumerate(self.action_results):
            m = r["matched"]
            where = f"action #{r['matchedIndex']}" if m else "no matching action" + (" in order" if i else "")
            crits.append(
                {
                    "evidence": {"exit_codes": [], "paths": [], "step_ids": [r["matchedIndex"] + 1] if m else []},
                    "explanation": f"{r['tool']} {r['argsContains']}: {where}",
                    "id": f"expected_action_{i}",
                    "safety_violation": False,
                    "status": "pass" if m else "fail",
                    "type": "expected_action",
                    "value": 1.0 if m else 0.0,
                    "weight": 1.0,
                }
            )
        for j, (ev, idx) in enumerate(zip(self.evidence_results, self.evidence_index, strict=True)):
            m = ev["matched"]
            code = ev.get("exitCode")
            crits.append(
                {
                    "evidence": {"exit_codes": [code] if m and code is not None else [], "paths": [], "step_ids": []},
                    "explanation": f"{ev['kind']} artifact containing {ev['contains']}: "
                    + (f"artifact #{idx}" if m else "none"),
                    "id": f"expected_evidence_{j}",
                    "safety_violation": False,
                    "status": "pass" if m else "fail",
                    "type": "expected_evidence",
                    "value": 1.0 if m else 0.0,
                    "weight": 1.0,
                }
            )
        sro = self.self_report_only
        return {
            "aggregation": "port_daddy",
            "behaviour": None,
            "criteria": crits,
            "error_criteria": [],
            "failed_criteria": [c["id"] for c in crits if c["status"] == "fail"],
            "loops": _loops(self.loops_of) if len(self.loops_of) >= _MIN_REPEATS else [],
            "malformed_tool_calls": 0,
            "pass_threshold": self.task.threshold,
            "passed": self.passed,
            "provenance_used": ["suite"],
            "reward": self.reward,
            "safety_violations": 0,
            "self_report_only": sro,
            "session_id": session_id,
            "task_id": self.task.id,
            "trust": None,
            "unverified_claims": success_claims(self.final_text) if sro else [],
            "warnings": [_SELF_WARNING] if sro else [],
        }

    def row_text(self, attempts: int) -> bytes:
        """The Port Daddy row (:attr:`row` with ``attempts``) as the report holds it (indent level 2).
        orjson writes the dict faster than a template would (measured: 46 against 71 ms at 10k)."""
        self.row["attempts"] = attempts
        return dumps_indented(self.row, 2)

    def native_text(self, session_id: str) -> tuple[str, int, bool]:
        """``(text, criteria, has loops)``: :meth:`native` as ``dumps_indented(native, 2)`` writes it,
        built from a template of the fixed layout (about 4x faster; a test checks they agree). Every
        value is written as the json module writes it: strings by its own encoder, floats by
        ``float.__repr__``, integers by ``int.__repr__``."""
        crits = []
        failed = []
        for i, r in enumerate(self.action_results):
            m = r["matched"]
            cid = f"expected_action_{i}"
            if m:
                where = f"action #{r['matchedIndex']}"
                steps = f"[\n{_I7}{r['matchedIndex'] + 1}\n{_I6}]"
            else:
                where = "no matching action" + (" in order" if i else "")
                steps = "[]"
                failed.append(cid)
            crits.append(_crit("[]", steps, f"{r['tool']} {r['argsContains']}: {where}", cid, m, "expected_action"))
        for j, (ev, idx) in enumerate(zip(self.evidence_results, self.evidence_index, strict=True)):
            m = ev["matched"]
            cid = f"expected_evidence_{j}"
            code = ev.get("exitCode")
            codes = f"[\n{_I7}{code!r}\n{_I6}]" if m and code is not None else "[]"
            if not m:
                failed.append(cid)
            explanation = f"{ev['kind']} artifact containing {ev['contains']}: " + (f"artifact #{idx}" if m else "none")
            crits.append(_crit(codes, "[]", explanation, cid, m, "expected_evidence"))
        sro = self.self_report_only
        loops = _loops(self.loops_of) if len(self.loops_of) >= _MIN_REPEATS else []
        crit_text = "[\n" + ",\n".join(crits) + f"\n{_I3}]" if crits else "[]"
        text = (
            f'{{\n{_I3}"aggregation": "port_daddy",\n{_I3}"behaviour": null,\n{_I3}"criteria": {crit_text},\n'
            f'{_I3}"error_criteria": [],\n{_I3}"failed_criteria": {_strs(failed, 3)},\n'
            f'{_I3}"loops": {dumps_indented(loops, 3).decode("utf-8") if loops else "[]"},\n'
            f'{_I3}"malformed_tool_calls": 0,\n{_I3}"pass_threshold": {self.task.threshold!r},\n'
            f'{_I3}"passed": {"true" if self.passed else "false"},\n'
            f'{_I3}"provenance_used": [\n{_I4}"suite"\n{_I3}],\n{_I3}"reward": {self.reward!r},\n'
            f'{_I3}"safety_violations": 0,\n{_I3}"self_report_only": {"true" if sro else "false"},\n'
            f'{_I3}"session_id": {_quote(session_id)},\n{_I3}"task_id": {_quote(self.task.id)},\n'
            f'{_I3}"trust": null,\n'
            f'{_I3}"unverified_claims": {_strs(_claims(self.final_text) if sro else [], 3)},\n'
            f'{_I3}"warnings": {_strs([_SELF_WARNING] if sro else [], 3)}\n{_I2}}}'
        )
        return text, len(crits), bool(loops)


_I2, _I3, _I4, _I5, _I6, _I7 = ("  " * n for n in range(2, 8))
_TRAINING_CHOSEN = f'{{\n{_I3}"note": {_quote(_CHOSEN)},\n{_I3}"preference": "chosen",\n{_I3}"reward": '
_TRAINING_REJECTED = f'{{\n{_I3}"note": {_quote(_REJECTED)},\n{_I3}"preference": "rejected",\n{_I3}"reward": '


def _strs(items: list, level: int) -> str:
    """A list of strings at indent ``level``, as the json module writes it."""
    if not items:
        return "[]"
    pad = "  " * (level + 1)
    return "[\n" + ",\n".join(pad + _quote(x) for x in items) + "\n" + "  " * level + "]"


def _crit(codes: str, steps: str, explanation: str, cid: str, matched: bool, kind: str) -> str:
    """One criterion result at indent level 4 (in a native report's ``criteria``)."""
    return (
        f'{_I4}{{\n{_I5}"evidence": {{\n{_I6}"exit_codes": {codes},\n{_I6}"paths": [],\n{_I6}"step_ids": {steps}\n'
        f'{_I5}}},\n{_I5}"explanation": {_quote(explanation)},\n{_I5}"id": "{cid}",\n'
        f'{_I5}"safety_violation": false,\n{_I5}"status": "{"pass" if matched else "fail"}",\n'
        f'{_I5}"type": "{kind}",\n{_I5}"value": {"1.0" if matched else "0.0"},\n{_I5}"weight": 1.0\n{_I4}}}'
    )


# --------------------------------------------------------------------------------------------
# Reading the file: the top-level object, its big arrays in chunks
# --------------------------------------------------------------------------------------------


def _decline_constant(name: str) -> Any:
    raise Declined(f"{name} is not JSON")  # NaN, Infinity: the validator's nan_not_allowed


_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19


def _long_int(data: bytes) -> bool:
    """True when ``data`` holds 19 digits in a row (about 10x faster than a regular expression)."""
    return _LONG_RUN in data.translate(_DIGITS_TO_ZERO)


def _loads(data: bytes) -> Any:
    """The json module's reading of ``data``: orjson's, or the json module's own where orjson's may
    differ (text holding 19 digits in a row: orjson reads integers beyond 64 bits as floats).
    orjson refuses a lone surrogate escape (a finding of the validator: declined); the json module
    does not, so text read by it must hold no surrogate escape. Declines text that is not JSON."""
    try:
        if _long_int(data):
            if _SURROGATE_ESCAPE.search(data):
                raise Declined("a surrogate escape")
            return json.loads(data, parse_constant=_decline_constant)
        return orjson.loads(data)
    except (ValueError, RecursionError) as e:  # orjson.JSONDecodeError, UnicodeDecodeError: ValueErrors
        raise Declined("not JSON here") from e


class _Splitter:
    """The top-level object of a JSON file, read in chunks of ``chunk`` bytes.

    :meth:`members` yields ``(key, value)`` for ordinary members and ``(key, _Array)`` for ``tasks``
    and ``trajectories`` when they are arrays; an array's :meth:`_Array.batches` yields lists of its
    elements (objects), a few megabytes of text at a time, with each batch's file span. A batch ends
    at a ``}`` proposed by bracket counts and is accepted only when orjson reads ``[`` + text + ``]``:
    the same text tokenised the same way, so a wrong cut (inside a string, or one level deeper) never
    parses. Raises :class:`Declined` on anything it cannot read exactly."""

    def __init__(self, f: BinaryIO, chunk: int):
        self.f = f
        self.chunk = chunk
        self.buf = b""
        self.pos = 0
        self.base = 0  # file offset of buf[0]
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.f.read(self.chunk)
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def _peek(self) -> int:
        """The next non-blank byte (not consumed), or -1 at the end of the file."""
        while True:
            buf, n = self.buf, len(self.buf)
            p = self.pos
            while p < n and buf[p] in _WS:
                p += 1
            self.pos = p
            if p < n:
                return buf[p]
            if not self._fill():
                return -1

    def _expect(self, byte: int) -> None:
        if self._peek() != byte:
            raise Declined("unexpected text")
        self.pos += 1

    def _string(self) -> str:
        if self._peek() != 0x22:
            raise Declined("a key")
        start = self.pos
        q = start + 1
        while True:
            q = self.buf.find(b'"', q)
            while q == -1:
                if not self._fill():
                    raise Declined("unterminated string")
                start, q = self.pos, self.buf.find(b'"', self.pos + 1)
            k = q
            while self.buf[k - 1] == 0x5C:  # backslashes before the quote: odd escapes it
                k -= 1
            if (q - k) % 2 == 0:
                break
            q += 1
        text = _loads(self.buf[start : q + 1])
        self.pos = q + 1
        return text

    def _value(self) -> Any:
        """One value ending before a ``,`` or ``}`` of the top-level object (a small member)."""
        self._peek()
        start_abs = self.base + self.pos
        scan_abs = start_abs
        while True:
            buf = self.buf
            start, scan = start_abs - self.base, scan_abs - self.base
            for m in re.finditer(rb"[,}]", buf[scan:]):
                end = scan + m.start()
                seg = buf[start:end]
                if seg.count(b"{") + seg.count(b"[") != seg.count(b"}") + seg.count(b"]"):
                    continue
                try:
                    value = _loads(seg)
                except Declined:
                    continue  # a cut inside a string or a nested value: try the next one
                self.pos = end
                return value
            scan_abs = self.base + len(buf)
            if not self._fill():
                raise Declined("unterminated value")

    def members(self) -> Iterator[tuple[str, Any]]:
        if self._peek() == 0xEF and self.buf[self.pos : self.pos + 3] == b"\xef\xbb\xbf":
            self.pos += 3  # a UTF-8 byte-order mark (parse_json reads utf-8-sig)
        self._expect(0x7B)
        if self._peek() == 0x7D:
            self.pos += 1
        else:
            while True:
                key = self._string()
                self._expect(0x3A)
                if key in ("tasks", "trajectories") and self._peek() == 0x5B:
                    self.pos += 1
                    arr = _Array(self)
                    yield key, arr
                    arr.drain()
                else:
                    yield key, self._value()
                c = self._peek()
                self.pos += 1
                if c == 0x7D:
                    break
                if c != 0x2C:
                    raise Declined("unexpected text")
        if self._peek() != -1:
            raise Declined("more than one document")


class _Array:
    """The elements of one top-level array, in batches (see :class:`_Splitter`)."""

    def __init__(self, sp: _Splitter):
        self.sp = sp
        self.done = False

    def batches(self) -> Iterator[tuple[list, int, int]]:
        """``(elements, file offset, end offset)``: the text ``[offset:end]`` holds those elements."""
        sp = self.sp
        if sp._peek() == 0x5D:
            sp.pos += 1
            self.done = True
            return
        while True:
            if len(sp.buf) - sp.pos < sp.chunk and not sp.eof:
                sp._fill()
            if sp._peek() == -1:
                raise Declined("unterminated array")
            batch = self._cut()
            while batch is None:
                if not sp._fill():
                    raise Declined("unterminated array")
                batch = self._cut()
            items, start, end = batch
            off = sp.base + start
            yield items, off, sp.base + end
            c = sp._peek()
            sp.pos += 1
            if c == 0x5D:
                self.done = True
                return
            if c != 0x2C:
                raise Declined("unexpected text in an array")

    def _cut(self) -> tuple[list, int, int] | None:
        """Complete elements from the buffer's current position, or ``None`` when it holds none."""
        sp = self.sp
        buf, start = sp.buf, sp.pos
        if buf[start : start + 1] != b"{":
            raise Declined("an array element that is not an object")
        c = buf.rfind(b"}", start)
        if c == -1:
            return None
        seg = buf[start : c + 1]
        opened = seg.count(b"{") + seg.count(b"[")
        closed = seg.count(b"}") + seg.count(b"]")
        tries = 0
        while c >= start:
            if opened == closed:
                tries += 1
                data = b"[" + buf[start : c + 1] + b"]"
                err = None
                try:
                    items = _loads(data)
                except Declined as d:
                    items, err = None, d.__cause__
                if items is not None:
                    sp.pos = c + 1
                    return items, start, c + 1
                ended = self._array_end(data, start, err)
                if ended is not None:
                    return ended
                if tries >= 4:
                    return self._exact(buf, start)
            prev = buf.rfind(b"}", start, c)
            if prev == -1:
                break
            gap = buf[prev + 1 : c + 1]
            opened -= gap.count(b"{") + gap.count(b"[")
            closed -= gap.count(b"}") + gap.count(b"]")
            c = prev
        return self._exact(buf, start)

    def _array_end(self, data: bytes, start: int, err: BaseException | None) -> tuple[list, int, int] | None:
        """When ``data`` (``[`` + text from ``start`` + ``]``) failed (``err``) because the array
        closed inside it (the cut counted past the array's ``]``), the elements before that ``]``."""
        if not isinstance(err, orjson.JSONDecodeError) or not err.msg.startswith("unexpected content after"):
            return None
        pos = err.pos  # a character index
        try:
            head = data.decode("utf-8")[:pos].encode("utf-8").rstrip()
        except UnicodeDecodeError:
            return None
        if not head.endswith(b"]"):
            return None
        try:
            items = _loads(head)
        except Declined:
            return None
        close = start + len(head) - 2  # the array's own "]" in the buffer
        self.sp.pos = close
        return items, start, close

    def _exact(self, buf: bytes, start: int) -> tuple[list, int, int] | None:
        """The slow exact cut: strings skipped by a regular expression, brackets counted."""
        depth = 0
        last = -1
        for m in re.finditer(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]', buf[start:]):
            tok = m.group()
            if tok in (b"{", b"["):
                depth += 1
            elif tok in (b"}", b"]"):
                depth -= 1
                if depth == 0:
                    last = start + m.end()
                elif depth < 0:
                    break
        if last == -1:
            return None
        items = _loads(b"[" + buf[start:last] + b"]")
        self.sp.pos = last
        return items, start, last

    def drain(self) -> None:
        if not self.done:
            for _ in self.batches():
                pass


# --------------------------------------------------------------------------------------------
# The spool of written pieces
# --------------------------------------------------------------------------------------------


class _Spool:
    """Byte pieces by number: in memory up to ``limit`` bytes in all, then in a temporary file."""

    def __init__(self, limit: int):
        self.limit = limit
        self.mem: list[bytes | None] = []
        self.size = 0
        self.file: BinaryIO | None = None
        self.offsets = array("q")
        self.lengths = array("q")
        self.end = 0
        self.dirty = False  # written to the file object but maybe not yet to the file

    def add(self, data: bytes) -> int:
        if self.file is None:
            self.mem.append(data)
            self.size += len(data)
            ref = len(self.mem) - 1
            if self.size > self.limit:
                self._spill()  # the same numbers, now in the file
            return ref
        self.file.write(data)
        self.dirty = True
        self.offsets.append(self.end)
        self.lengths.append(len(data))
        self.end += len(data)
        return len(self.offsets) - 1

    def _spill(self) -> None:
        import tempfile  # only a large suite spills (the import costs start-up time)

        self.file = tempfile.TemporaryFile(prefix="agent-rl-sandbox-report-")  # noqa: SIM115 - closed in close()
        for data in self.mem:
            data = data or b""
            self.file.write(data)
            self.offsets.append(self.end)
            self.lengths.append(len(data))
            self.end += len(data)
        self.mem = []
        self.dirty = True

    def drop(self, ref: int) -> None:
        if self.file is None:
            self.mem[ref] = None

    def get(self, ref: int) -> bytes:
        if self.file is None:
            data = self.mem[ref]
            assert data is not None
            return data
        if self.dirty:  # pread reads the file, not the file object's buffer
            self.file.flush()
            self.dirty = False
        return os.pread(self.file.fileno(), self.lengths[ref], self.offsets[ref])

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        self.mem = []


# --------------------------------------------------------------------------------------------
# The whole suite
# --------------------------------------------------------------------------------------------


def _r(x: float) -> float:
    return round(float(x), 6) + 0.0  # tools.evals._report._r


class _Run:
    """The suite's state while it is read: tasks, per-trajectory numbers, spooled pieces, warnings."""

    def __init__(self, spool: _Spool):
        self.spool = spool
        self.top: dict[str, Any] = {}
        self.ids: list[str] = []  # task ids in file order
        self.store: list[Any] = []  # each task: its _Task, or (compact) the spool number of its JSON
        self.first: dict[str, int] = {}  # task id -> index of the first task with it
        self.compact = False
        self._cache: dict[int, _Task] = {}
        self.dup_ids: set[str] = set()
        self.task_warnings: list[str] = []
        self.traj_warnings: list[str] = []
        # per task (by index, sized when the tasks are read): trajectories naming it, and for a first
        # task the spooled row of its last trajectory, its reward and flags (pass 1, selfReportOnly 2)
        self.attempts = array("l")
        self.row_ref = array("q")
        self.row_reward = array("d")
        self.row_flags = bytearray()
        self.dup_last: dict[str, dict] = {}  # repeated task id -> its last trajectory (plain)
        # per native report: task index, session id, reward, flags (passed 1, selfReportOnly 2,
        # loops 4), criteria, spool number
        self.n_task = array("l")
        self.n_sid: list[str] = []
        self.n_reward = array("d")
        self.n_flags = bytearray()
        self.n_crit = array("l")
        self.n_ref = array("q")
        self.n_traj = 0
        self.order = True
        self.default_pass = 1.0

    def add_tasks(self, items: list) -> None:
        spool, compact = self.spool, self.compact
        for t in items:
            task = _Task(t, self.default_pass)
            k = len(self.ids)
            self.ids.append(task.id)
            stored: Any = task
            if compact:  # keep the task's text (spooled, on disk past the spool's limit), not its objects
                try:
                    # a copy of exact size: orjson's bytes keep its buffer (about 4 KiB each)
                    stored = spool.add(bytes(memoryview(orjson.dumps(t))))
                except TypeError:  # an integer beyond 64 bits: keep the object
                    pass
            self.store.append(stored)
            if task.id in self.first:
                self.dup_ids.add(task.id)
                self.task_warnings.append(
                    f"task id {task.id!r} appears more than once; trajectories are scored against the first"
                )
            else:
                self.first[task.id] = k

    def tasks_read(self) -> None:
        """Size the per-task arrays (every task is read before any trajectory is scored)."""
        n = len(self.ids)
        self.attempts = array("l", bytes(8 * n)) if array("l").itemsize == 8 else array("l", [0] * n)
        self.row_ref = array("q", [-1]) * n
        self.row_reward = array("d", bytes(8 * n))
        self.row_flags = bytearray(n)

    def task(self, k: int) -> _Task:
        """The ``k``-th task (rebuilt from its text in compact mode, up to :data:`TASK_CACHE` cached)."""
        stored = self.store[k]
        if type(stored) is not int:
            return stored
        task = self._cache.get(k)
        if task is None:
            if len(self._cache) >= TASK_CACHE:
                self._cache.clear()
            task = self._cache[k] = _Task(orjson.loads(self.spool.get(stored)), self.default_pass)
        return task

    def add_trajectories(self, items: list) -> None:
        order, spool = self.order, self.spool
        for tr in items:
            i = self.n_traj
            self.n_traj += 1
            tid, actions, artifacts = _check_trajectory(tr)
            k = self.first.get(tid)
            if k is None:
                self.traj_warnings.append(f"trajectories[{i}] has taskId {tid!r}, which no task declares; not scored")
                continue
            self.attempts[k] += 1
            if tid in self.dup_ids:
                self.dup_last[tid] = tr
            sid = tr.get("id") or tr.get("sessionId") or f"{tid}#{i}"
            done = _Scored(self.task(k), actions, artifacts, tr, order)
            self._native(k, done, sid)
            old = self.row_ref[k]
            if old >= 0:
                spool.drop(old)
            # this is the task's last trajectory so far: the count so far is its count
            self.row_ref[k] = spool.add(done.row_text(self.attempts[k]))
            self.row_reward[k] = done.reward
            self.row_flags[k] = done.passed | (done.self_report_only << 1)

    def _native(self, k: int, done: _Scored, sid: str) -> None:
        text, n_criteria, loops = done.native_text(sid)
        self.n_ref.append(self.spool.add(text.encode("utf-8")))
        self.n_task.append(k)
        self.n_sid.append(sid)
        self.n_reward.append(done.reward)
        self.n_flags.append(done.passed | (done.self_report_only << 1) | (loops << 2))
        self.n_crit.append(n_criteria)

    def native_order(self) -> range | list[int]:
        """The native reports' order in the report: by task id, then session id, stable
        (``tools.evals._report.sort_scores``); no sort when they came in that order."""
        ids, tasks, sids = self.ids, self.n_task, self.n_sid
        n = len(sids)
        prev = (ids[tasks[0]], sids[0]) if n else None
        for i in range(1, n):
            key = (ids[tasks[i]], sids[i])
            if key < prev:  # type: ignore[operator]
                return sorted(range(n), key=lambda j: (ids[tasks[j]], sids[j]))
            prev = key
        return range(n)


def _consume(sp: _Splitter, run: _Run, f: BinaryIO) -> None:
    """Read every member; tasks are scored against before trajectories (re-read when they come first)."""
    seen: set[str] = set()
    pending: list[tuple[int, int]] = []  # spans of trajectories read before the tasks
    tasks_done = False
    for key, value in sp.members():
        if key in ("tasks", "trajectories"):
            if key in seen:
                raise Declined(f"{key} given twice")
            seen.add(key)
        if not isinstance(value, _Array):
            if key in ("tasks", "trajectories"):
                raise Declined(f"{key} is not a list")  # a finding of the validator
            run.top[key] = value
            continue
        if key == "tasks":
            _top_settings(run)
            for items, _, _ in value.batches():
                run.add_tasks(items)
            if not run.ids:
                raise Declined("no tasks")
            run.tasks_read()
            tasks_done = True
            for start, end in pending:
                run.add_trajectories(_loads(b"[" + os.pread(f.fileno(), end - start, start) + b"]"))
            pending = []
        elif tasks_done:
            for items, _, _ in value.batches():
                run.add_trajectories(items)
        else:
            for items, start, end in value.batches():
                for tr in items:
                    _check_trajectory(tr)  # decline early, before the tasks are read
                pending.append((start, end))
    if not tasks_done:
        raise Declined("no tasks")
    if pending:  # pragma: no cover - pending is emptied when the tasks are read
        raise Declined("trajectories left unread")


def _top_settings(run: _Run) -> None:
    # the reward spec may follow the tasks in the file; thresholds are fixed when tasks are read,
    # so a spec given after the tasks is declined unless it keeps the default pass reward
    order, default_pass, _, _, _ = _check_top(run.top)
    run.order, run.default_pass = order, default_pass


_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[{}\[\]]|"')
_CLOSES = {0x7D: 0x7B, 0x5D: 0x5B}


def defect(path: str) -> str | None:
    """Why the file at ``path`` cannot be a JSON document at all, or ``None`` when no such defect is
    found: ``not UTF-8 text (byte N)``, or a bracket or string the text never closes or closes with
    the wrong bracket (``not valid JSON: ... at byte N (line L)``). It streams the file (no size
    cap; about a second for 200 MB) and is meant for explaining a decline of :func:`score_suite_to`
    on a file too big for the model path, which would only report its size. ``OSError`` when the
    file cannot be read."""
    import codecs
    import mmap

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        dec = codecs.getincrementaldecoder("utf-8")()
        done = 0
        while True:
            data = f.read(CHUNK_BYTES)
            held = len(dec.getstate()[0])  # bytes of a character cut by the previous chunk
            try:
                dec.decode(data, final=not data)
            except UnicodeDecodeError as e:
                return f"not UTF-8 text (byte {done - held + e.start})"
            if not data:
                break
            done += len(data)
        if size == 0:
            return "not valid JSON: the file is empty"
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            stack: list[tuple[int, int]] = []
            where: int | None = None
            why = ""
            for m in _TOKEN.finditer(mm):
                tok = m.group()
                c = tok[0]
                if c == 0x22:
                    if len(tok) == 1:
                        where, why = m.start(), "a string that is never closed"
                        break
                elif c in (0x7B, 0x5B):
                    stack.append((c, m.start()))
                elif not stack or stack[-1][0] != _CLOSES[c]:
                    where, why = m.start(), f"an unexpected {chr(c)!r}"
                    break
                else:
                    stack.pop()
            if where is None and stack:
                opener, start = stack[-1]
                where, why = (
                    size,
                    f"the file ends inside the {'object' if opener == 0x7B else 'array'} opened at byte {start}",
                )
            if where is None:
                return None
            line = mm[:where].count(b"\n") + 1
    return f"not valid JSON: {why}, at byte {where} (line {line})"


def score_suite_to(
    path: str,
    source: str,
    write: Callable[[bytes], Any],
    *,
    chunk: int = CHUNK_BYTES,
    summary: Callable[[dict, list, list, int], Any] | None = None,
) -> None:
    """Score the Port Daddy suite file ``path`` and pass the report's bytes to ``write`` in pieces.

    ``source`` is the report's ``source`` (the file's name). The bytes are those of
    ``report_json_bytes(score_suite_document(...))`` for the same file. Raises :class:`Declined`
    before the first ``write`` when the file is not a suite this scorer takes (see the module
    docstring); ``OSError`` when it cannot be read.

    With ``summary``, nothing is written: ``summary(small, by_task, trajectories, count)`` gets the
    report's small members (``stats``, ``summary``, ``warnings``, ...: a dict as in the report),
    the first :data:`SUMMARY_ROWS` ``by_task`` groups and trajectory reports (dicts, in the
    report's order) and the number of trajectory reports (for a table of a suite of any size)."""
    spool = _Spool(SPOOL_MEMORY_BYTES)
    try:
        with open(path, "rb") as f:
            if not os.path.isfile(path):
                raise Declined("not a regular file")
            run = _Run(spool)
            run.compact = os.fstat(f.fileno()).st_size > COMPACT_TASKS_BYTES
            sp = _Splitter(f, chunk)
            _consume(sp, run, f)
            order, default_pass, need_unhooks, agent, unhooks = _check_top(run.top)
            if (order, default_pass) != (run.order, run.default_pass):
                raise Declined("rewardSpec after the tasks")
            _finish(run, need_unhooks, agent, unhooks, source, write, summary)
    finally:
        spool.close()


SUMMARY_ROWS = 50
"""``by_task`` groups and trajectory reports handed to ``score_suite_to``'s ``summary``."""


def _finish(
    run: _Run, need_unhooks: bool, agent: Any, unhooks: list, source: str, write: Callable, on_summary: Callable | None
) -> None:
    spool, order, ids = run.spool, run.order, run.ids
    per_task_warnings: list[str] = []
    for k, tid in enumerate(ids):
        first = run.first[tid] == k
        n = run.attempts[run.first[tid]]
        if first and n > 1:
            per_task_warnings.append(f"task {tid!r} has {n} trajectories; its Port Daddy row scores the last one")
        if first and run.row_ref[k] >= 0:
            continue
        t = run.task(k)
        last = run.dup_last.get(tid) if n else None
        if last is not None:
            acts, arts = last.get("actions", []), last.get("artifacts", [])
        else:
            acts, arts = [], []
        scored = _Scored(t, acts, arts, last, order)
        if first:
            run._native(k, scored, f"{tid}#missing")
            per_task_warnings.append(f"task {tid!r} has no trajectory; it is scored as an empty attempt")
        run.row_ref[k] = spool.add(scored.row_text(n))
        run.row_reward[k] = scored.reward
        run.row_flags[k] = scored.passed | (scored.self_report_only << 1)
    spool.flush()
    valid = _validated_unhooks(unhooks)
    unhooks_ready = len(valid) > 0 if need_unhooks else True
    flags = run.row_flags
    passed_rows = sum(f & 1 for f in flags)
    failed_rows = len(flags) - passed_rows
    gate_passed = failed_rows == 0
    total = 0.0
    for r in run.row_reward:  # reduce((sum, x) => sum + x, 0): left to right, uncompensated
        total += r
    warnings = []
    if not gate_passed:
        warnings.append("eval gate failed; do not deploy an adapted agent from this report")
    if not unhooks_ready:
        warnings.append("no validated unhooks supplied; do not deploy an adapted agent from this report")
    warnings += run.task_warnings + run.traj_warnings + per_task_warnings
    seq = run.native_order()
    n = len(seq)
    n_task, n_reward, n_flags = run.n_task, run.n_reward, run.n_flags

    def sorted_natives() -> Iterator[tuple[str, float, int]]:
        for i in seq:
            yield ids[n_task[i]], n_reward[i], n_flags[i]

    # by task, in sorted order (tools.evals._report.group_stats): counted here, written lazily
    n_multi, n_zero = _group_counts(sorted_natives())
    passed_n = sum(f & 1 for f in n_flags)
    stats = {
        "criteria_total": sum(run.n_crit),
        "failed": n - passed_n,
        "groups": n_multi,
        "loops": sum(1 for f in n_flags if f & 4),
        "malformed_tool_calls": 0,
        "mean_reward": _r(sum(n_reward[i] for i in seq) / n) if n else 0.0,
        "pass_rate": _r(passed_n / n) if n else 0.0,
        "passed": passed_n,
        "problems": 0,
        "safety_violations": 0,
        "self_report_only": sum(1 for f in n_flags if f & 2),
        "trajectories": n,
        "unscorable_criteria": 0,
        "unscorable_share": 0.0,
        "validated_unhooks": len(valid),
        "zero_variance_groups": n_zero,
        "zero_variance_share": _r(n_zero / n_multi) if n_multi else 0.0,
    }
    if n == 0:
        warnings.append("no trajectories were scored")
    if n_zero:
        warnings.append(
            f"{n_zero} of {n_multi} task group(s) have zero reward variance: group-relative RL learns nothing from them"
        )
    summary = {
        "averageReward": round3(total / len(ids)),
        "deployable": gate_passed and unhooks_ready,
        "evalGatePassed": gate_passed,
        "failed": failed_rows,
        "passed": passed_rows,
        "taskCount": len(ids),
        "unhooksReady": unhooks_ready,
        "validatedUnhookCount": len(valid),
    }

    def training() -> Iterator[bytes]:
        for tid, reward, f in zip(ids, run.row_reward, flags, strict=True):
            chosen = f == 1  # passed and not self-report-only
            yield (
                (_TRAINING_CHOSEN if chosen else _TRAINING_REJECTED)
                + f'{reward!r},\n{_I3}"taskId": {_quote(tid)}\n{_I2}}}'
            ).encode("utf-8")

    small: dict[str, Any] = {
        "agent": agent if agent else {},
        "kind": "port_daddy_suite",
        "problems": [],
        "report_version": 1,
        "rewardSpec": {
            "actionOrderRequired": order,
            "defaultPassReward": run.default_pass,
            "requireValidatedUnhooksForDeployment": need_unhooks,
        },
        "source": source,
        "stats": stats,
        "suggestedUnhooks": list(SUGGESTED_UNHOOKS),
        "summary": summary,
        "validatedUnhooks": valid,
        "warnings": warnings,
    }
    big: dict[str, Callable[[], Iterator[bytes]]] = {
        "by_task": lambda: (_group_text(g).encode("utf-8") for g in _groups(sorted_natives())),
        "rows": lambda: (spool.get(r) for r in run.row_ref),
        "trainingRows": training,
        "trajectories": lambda: (spool.get(run.n_ref[i]) for i in seq),
    }
    if on_summary is not None:
        groups = [g for _, g in zip(range(SUMMARY_ROWS), _groups(sorted_natives()), strict=False)]
        heads = [orjson.loads(spool.get(run.n_ref[i])) for i in list(seq[:SUMMARY_ROWS])]
        on_summary(small, groups, heads, n)
        return
    write(b"{")
    for idx, key in enumerate(sorted([*small, *big])):
        out = [b",\n  " if idx else b"\n  ", dumps_indented(key), b": "]
        if key in small:
            out.append(dumps_indented(small[key], 1))
            write(b"".join(out))
            continue
        write(b"".join(out))
        _write_list(big[key](), write)
    write(b"\n}\n")


def _groups(natives: Iterator[tuple[str, float, int]]) -> Iterator[dict]:
    """``GroupStats`` dicts of the sorted ``(task id, reward, flags)``, one per task id
    (``tools.evals._report.group_stats``)."""
    tid: str | None = None
    rewards: list[float] = []
    passed = 0
    for t, reward, f in natives:
        if t != tid:
            if tid is not None:
                yield _group(tid, rewards, passed)
            tid, rewards, passed = t, [], 0
        rewards.append(reward)
        passed += f & 1
    if tid is not None:
        yield _group(tid, rewards, passed)


def _group_counts(natives: Iterator[tuple[str, float, int]]) -> tuple[int, int]:
    """``(groups of two or more, of which zero-variance)`` of :func:`_groups`, without building them."""
    multi = zero = 0
    tid: str | None = None
    k = 0
    lo = hi = 0.0
    for t, reward, _ in natives:
        if t != tid:
            if k >= 2:
                multi += 1
                zero += lo == hi
            tid, k, lo, hi = t, 0, reward, reward
        k += 1
        lo, hi = min(lo, reward), max(hi, reward)
    if k >= 2:
        multi += 1
        zero += lo == hi
    return multi, zero


def _group_text(g: dict) -> str:
    """A ``GroupStats`` dict at indent level 2, as the json module writes it."""
    return (
        f'{{\n{_I3}"attempts": {g["attempts"]},\n{_I3}"mean_reward": {g["mean_reward"]!r},\n'
        f'{_I3}"pass_rate": {g["pass_rate"]!r},\n{_I3}"passed": {g["passed"]},\n'
        f'{_I3}"reward_variance": {g["reward_variance"]!r},\n{_I3}"task_id": {_quote(g["task_id"])},\n'
        f'{_I3}"zero_variance": {"true" if g["zero_variance"] else "false"}\n{_I2}}}'
    )


def _group(tid: str, rewards: list[float], passed: int) -> dict:
    k = len(rewards)
    mean = sum(rewards) / k
    var = sum((r - mean) ** 2 for r in rewards) / k if k >= 2 else 0.0
    return {
        "attempts": k,
        "mean_reward": _r(sum(rewards) / k),
        "pass_rate": _r(passed / k),
        "passed": passed,
        "reward_variance": _r(var),
        "task_id": tid,
        "zero_variance": k >= 2 and max(rewards) == min(rewards),
    }


def _write_list(pieces: Iterator[bytes], write: Callable[[bytes], Any]) -> None:
    """A list at indent level 1 whose items are already written at level 2."""
    buf: list[bytes] = []
    size = 0
    first = True
    for p in pieces:
        buf.append(b"[\n    " if first else b",\n    ")
        buf.append(p)
        first = False
        size += len(p)
        if size > 1 << 16:
            write(b"".join(buf))
            buf, size = [], 0
    buf.append(b"[]" if first else b"\n  ]")
    write(b"".join(buf))

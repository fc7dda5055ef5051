"""The per-trajectory part of the streaming suite scorer (:mod:`._suite_fast`): checking a task and
a trajectory, scoring one against the other, and the text of its report pieces.

Plain Python, compiled with mypyc where the machine allows it (``make install`` runs
``scripts/compile_scorer.py``, which builds ``_suite_hot_c`` from this file; :mod:`._suite_fast`
uses that extension only when it was built from this very text, else this module: the same code,
so the same bytes, checked by ``tests/tools/evals/test_suite_compiled.py``). Imports nothing heavy.
"""

from __future__ import annotations

import json
import math
import os
import re
from array import array
from collections.abc import Iterator
from json.encoder import encode_basestring as _quote  # the C encoder json.dumps uses
from typing import Any, BinaryIO

from agent_rl_sandbox.tools._claims import ERROR_TEXT, success_claims
from agent_rl_sandbox.tools._jsonout import dumps_indented
from agent_rl_sandbox.tools._jsvalue import FINAL_TEXT_FIELDS, final_state_text, js_json, js_number, js_string, round3
from agent_rl_sandbox.tools._nesting import nested_deeper_than

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


class NeedIndex(Exception):
    """A trajectory with no ``id`` or ``sessionId`` (its session id is ``taskId#index``) in a part
    of the file scored without knowing how many trajectories came before it (``_suite_fast``'s
    second process): that part is scored again by the first."""


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


# what json.dumps(args, sort_keys=True, ensure_ascii=False, default=str) builds on every call
_ARGS_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def _args_json(args: Any) -> str:
    """``tools.evals._actions.actions_of``'s canonical arguments text."""
    try:
        return _ARGS_ENCODER.encode(args)
    except (TypeError, ValueError, RecursionError):
        return "{}"


def _call_failed(a: dict) -> bool:
    """``tools.evals._loops.call_failed`` of a suite action as ``_port_daddy._steps_of`` builds it."""
    if a["tool"] == _MALFORMED_TOOL or a.get("error") or a.get("status") in ("error", "failed"):
        return True
    code = a.get("exitCode")
    if type(code) is int:
        return code != 0
    texts = [v for v in (a.get("error"), a.get("output"), a.get("result")) if isinstance(v, str)]
    if not texts:
        return False
    text = "\n".join(texts)
    return bool(text) and bool(ERROR_TEXT.search(text))


def _loops(actions: list) -> list:
    """``find_loops(actions_of(_steps_of(actions)))`` as plain dicts (``LoopFinding`` fields)."""
    n = len(actions)
    if n < _MIN_REPEATS:
        return []
    # three equal calls in a row need three equal tools in a row: most trajectories have none
    t0: str = actions[0]["tool"]
    t1: str = actions[1]["tool"]
    i = 2
    while i < n:
        t2: str = actions[i]["tool"]
        if t2 == t1 and t1 == t0:
            break
        t0, t1 = t1, t2
        i += 1
    else:
        return []
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
        if not _call_failed(a):  # ends the run; its arguments' text is never compared
            close()
            seq = []
            continue
        args = a.get("args", {})
        here = (i + 1, a["tool"], _args_json(args if isinstance(args, dict) else {}))
        if seq and here[1] == seq[-1][1] and here[2] == seq[-1][2]:
            seq.append(here)
            continue
        close()
        seq = [here]
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
# A batch of trajectories, and the report's by_task groups
# --------------------------------------------------------------------------------------------

_SEP = ",\n    "  # before each list item at indent level 2 (tools._suite_fast._SEP)
_SEP_BYTES = b",\n    "
_BLOCK = 1 << 20


class Spool:
    """Byte pieces by number: in memory up to ``limit`` bytes in all, then in a temporary file
    (written a megabyte at a time, read back in runs of consecutive pieces)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.block = min(_BLOCK, limit)  # bytes written or read at a time once in the file
        self.mem: list[bytes | None] = []
        self.size = 0
        self.file: BinaryIO | None = None
        self.offsets = array("q")
        self.lengths = array("q")
        self.end = 0
        self.pending: list[bytes] = []  # pieces not yet written to the file, from offset self.written
        self.pending_size = 0
        self.written = 0

    def add(self, data: bytes) -> int:
        if self.file is None:
            self.mem.append(data)
            self.size += len(data)
            ref = len(self.mem) - 1
            if self.size > self.limit:
                self._spill()  # the same numbers, now in the file
            return ref
        self._put(data)
        return len(self.offsets) - 1

    def _put(self, data: bytes) -> None:
        n = len(data)
        self.pending.append(data)
        self.pending_size += n
        self.offsets.append(self.end)
        self.lengths.append(n)
        self.end += n
        if self.pending_size >= self.block:
            self._sync()

    def _sync(self) -> None:
        """Write the pending pieces to the file (os.pwrite: no file object buffer to flush)."""
        if self.pending and self.file is not None:
            data = b"".join(self.pending)
            fd, at = self.file.fileno(), self.written
            view = memoryview(data)
            while view:
                done = os.pwrite(fd, view, at)
                view, at = view[done:], at + done
            self.written = at
            self.pending, self.pending_size = [], 0

    def _spill(self) -> None:
        import tempfile  # only a large suite spills (the import costs start-up time)

        self.file = tempfile.TemporaryFile(prefix="agent-rl-sandbox-report-")  # noqa: SIM115 - closed in close()
        mem, self.mem = self.mem, []
        for i, data in enumerate(mem):
            mem[i] = None  # each piece freed once it is written: no second copy of the whole
            self._put(data or b"")
        self._sync()

    def attach(self, file: BinaryIO) -> None:
        """Write every piece to ``file`` (an empty file opened for reading and writing) from the
        first one, whatever the size: for a spool filled in another process and read back with
        :meth:`adopt` (``_suite_fast``'s second process)."""
        if self.mem or self.file is not None:
            raise ValueError("attach() needs an empty spool")
        self.file = file

    def adopt(self, file: BinaryIO, offsets: bytes, lengths: bytes) -> None:
        """Read back the pieces another process's spool wrote to ``file`` (see :meth:`attach`):
        ``offsets`` and ``lengths`` are that spool's ``array("q")`` bytes (``tobytes()``), so piece
        ``i`` there is piece ``i`` here. Pieces added afterwards go after them."""
        if self.mem or self.file is not None:
            raise ValueError("adopt() needs an empty spool")
        self.file = file
        self.offsets = array("q", offsets)
        self.lengths = array("q", lengths)
        n = len(self.offsets)
        self.end = self.written = self.offsets[n - 1] + self.lengths[n - 1] if n else 0

    def drop(self, ref: int) -> None:
        if self.file is None:
            self.mem[ref] = None

    def get(self, ref: int) -> bytes:
        if self.file is None:
            data = self.mem[ref]
            assert data is not None
            return data
        if self.offsets[ref] >= self.written:
            self._sync()
        return os.pread(self.file.fileno(), self.lengths[ref], self.offsets[ref])

    def blocks(self, refs: Any) -> Iterator[bytes]:
        """The pieces numbered ``refs`` (an iterable of ints), in that order, concatenated into
        blocks of about a megabyte at most (pieces next to each other in the file are read at once)."""
        if self.file is None:
            mem = self.mem
            buf: list[Any] = []
            size = 0
            for r in refs:
                data = mem[r]
                buf.append(data)
                size += len(data)
                if size >= self.block:
                    yield b"".join(buf)
                    buf, size = [], 0
            if buf:
                yield b"".join(buf)
            return
        self._sync()
        fd = self.file.fileno()
        offsets, lengths, block = self.offsets, self.lengths, self.block
        start = end = -1
        for r in refs:
            at = offsets[r]
            if at == end and end - start < block:
                end += lengths[r]
                continue
            if start >= 0:
                yield os.pread(fd, end - start, start)
            start, end = at, at + lengths[r]
        if start >= 0:
            yield os.pread(fd, end - start, start)

    def flush(self) -> None:
        self._sync()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        self.mem = []
        self.pending = []


def add_native(run: Any, k: int, done: _Scored, sid: str) -> None:
    """Spool ``done``'s native report (session ``sid``, task index ``k``) and record its numbers
    on ``run`` (a ``tools._suite_fast._Run``)."""
    text, n_criteria, loops = done.native_text(sid)
    run.n_ref.append(run.spool.add((_SEP + text).encode("utf-8")))
    run.n_task.append(k)
    run.n_sid.append(sid)
    run.n_reward.append(done.reward)
    run.n_flags.append(int(done.passed) | (int(done.self_report_only) << 1) | (int(loops) << 2))
    run.n_crit.append(n_criteria)


def score_batch(run: Any, items: list[Any]) -> None:
    """Check and score each trajectory of ``items`` (parsed dicts, in file order) against its task
    on ``run`` (a ``tools._suite_fast._Run``): its native report and its task's row spooled, the
    task's counts updated, a trajectory naming no task recorded (its index and task id) for a
    warning. Raises :class:`Declined`, and :class:`NeedIndex` when ``run.indexed`` is false and a
    trajectory's session id would be its index."""
    order: bool = run.order
    rows = run.rows
    first: dict[str, int] = run.first
    dup_ids: set[str] = run.dup_ids
    store: list[Any] = run.store
    attempts, row_ref, row_reward, row_flags = run.attempts, run.row_ref, run.row_reward, run.row_flags
    indexed: bool = run.indexed  # False in a second process: the trajectory's index in the file is unknown
    for tr in items:
        i: int = run.n_traj
        run.n_traj = i + 1
        tid, actions, artifacts = _check_trajectory(tr)
        k = first.get(tid)
        if k is None:
            run.unknown_tasks.append((i, tid))  # a warning naming the index (tools._suite_fast._finish)
            continue
        n: int = attempts[k] + 1
        attempts[k] = n
        if tid in dup_ids:
            run.dup_last[tid] = tr
        sid = tr.get("id") or tr.get("sessionId")
        if not sid:
            if not indexed:
                raise NeedIndex(tid)
            sid = f"{tid}#{i}"
        stored = store[k]
        task: _Task = stored if type(stored) is _Task else run.task(k)
        done = _Scored(task, actions, artifacts, tr, order)
        add_native(run, k, done, sid)
        old: int = row_ref[k]
        if old >= 0:
            rows.drop(old)
        # this is the task's last trajectory so far: the count so far is its count
        row_ref[k] = rows.add(_SEP_BYTES + done.row_text(n))
        row_reward[k] = done.reward
        row_flags[k] = int(done.passed) | (int(done.self_report_only) << 1)


def groups(natives: Iterator[tuple[str, float, int]]) -> Iterator[dict]:
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


def group_counts(natives: Iterator[tuple[str, float, int]]) -> tuple[int, int]:
    """``(groups of two or more, of which zero-variance)`` of :func:`groups`, without building them."""
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


def group_text(g: dict) -> str:
    """A ``GroupStats`` dict at indent level 2, as the json module writes it."""
    return (
        f'{{\n{_I3}"attempts": {g["attempts"]},\n{_I3}"mean_reward": {g["mean_reward"]!r},\n'
        f'{_I3}"pass_rate": {g["pass_rate"]!r},\n{_I3}"passed": {g["passed"]},\n'
        f'{_I3}"reward_variance": {g["reward_variance"]!r},\n{_I3}"task_id": {_quote(g["task_id"])},\n'
        f'{_I3}"zero_variance": {"true" if g["zero_variance"] else "false"}\n{_I2}}}'
    )


def _r(x: float) -> float:
    return round(float(x), 6) + 0.0  # tools.evals._report._r


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


# --------------------------------------------------------------------------------------------
# The report's end (tools._suite_fast._finish): per-task rows, the order, by_task and trainingRows
# --------------------------------------------------------------------------------------------

_TRAINING_CHOSEN_SEP = _SEP + _TRAINING_CHOSEN
_TRAINING_REJECTED_SEP = _SEP + _TRAINING_REJECTED


def finish_rows(run: Any) -> list[str]:
    """Each task's Port Daddy row where no trajectory gave it one (a task without a trajectory is
    scored as an empty attempt, with a native report ``<id>#missing``; a repeated task id scores
    its id's last trajectory), spooled on ``run`` (a ``tools._suite_fast._Run``); returns the
    per-task warnings in task order."""
    ids: list[str] = run.ids
    first: dict[str, int] = run.first
    attempts, row_ref, row_reward, row_flags = run.attempts, run.row_ref, run.row_reward, run.row_flags
    rows = run.rows
    dup_last: dict[str, Any] = run.dup_last
    order: bool = run.order
    warnings: list[str] = []
    for k in range(len(ids)):
        tid = ids[k]
        f = first[tid]
        is_first = f == k
        n: int = attempts[f]
        if is_first and n > 1:
            warnings.append(f"task {tid!r} has {n} trajectories; its Port Daddy row scores the last one")
        if is_first and row_ref[k] >= 0:
            continue
        t = run.task(k)
        last = dup_last.get(tid) if n else None
        if last is not None:
            acts, arts = last.get("actions", []), last.get("artifacts", [])
        else:
            acts, arts = [], []
        scored = _Scored(t, acts, arts, last, order)
        if is_first:
            add_native(run, k, scored, f"{tid}#missing")
            warnings.append(f"task {tid!r} has no trajectory; it is scored as an empty attempt")
        row_ref[k] = rows.add(_SEP_BYTES + scored.row_text(n))
        row_reward[k] = scored.reward
        row_flags[k] = int(scored.passed) | (int(scored.self_report_only) << 1)
    return warnings


def native_order(ids: list[str], tasks: Any, sids: list[str]) -> Any:
    """The native reports' order in the report: by task id (``ids[tasks[i]]``), then session id,
    stable (``tools.evals._report.sort_scores``): ``range(n)`` when they came in that order, else
    the sorted list of indices."""
    n = len(sids)
    if n == 0:
        return range(0)
    prev_t: str = ids[tasks[0]]
    prev_s: str = sids[0]
    for i in range(1, n):
        t: str = ids[tasks[i]]
        s: str = sids[i]
        if t < prev_t or (t == prev_t and s < prev_s):
            keys = [(ids[tasks[j]], sids[j]) for j in range(n)]
            return sorted(range(n), key=keys.__getitem__)
        prev_t, prev_s = t, s
    return range(n)


def natives_in(ids: list[str], tasks: Any, rewards: Any, flags: Any, seq: Any) -> Iterator[tuple[str, float, int]]:
    """``(task id, reward, flags)`` of each native report, in the order ``seq``."""
    for i in seq:
        yield ids[tasks[i]], rewards[i], flags[i]


def flag_counts(flags: Any) -> tuple[int, int, int]:
    """How many of ``flags`` (bytes) have bit 1, bit 2 and bit 4 set."""
    a = b = c = 0
    for f in flags:
        a += f & 1
        b += (f >> 1) & 1
        c += (f >> 2) & 1
    return a, b, c


def ordered_sum(values: Any, seq: Any) -> float:
    """``values[i]`` summed left to right in the order ``seq``, uncompensated (as ``sum`` of a
    generator and JavaScript's ``reduce`` add them); 0.0 for none."""
    total = 0.0
    for i in seq:
        total += values[i]
    return total


def by_task_blocks(natives: Iterator[tuple[str, float, int]]) -> Iterator[bytes]:
    """The report's ``by_task`` items (:func:`group_text` of each of :func:`groups`, each preceded
    by ``_SEP``) as UTF-8 blocks of about a megabyte. A task with one attempt (most) has the text
    of its reward and pass (remembered) with its task id: the same text."""
    buf: list[str] = []
    size = 0
    singles: dict[tuple[float, int], tuple[str, str]] = {}
    tid: str | None = None
    rewards: list[float] = []
    passed = 0
    for t, reward, f in natives:
        if t != tid:
            if tid is not None:
                piece = _group_piece(tid, rewards, passed, singles)
                buf.append(piece)
                size += len(piece)
                if size >= _BLOCK:
                    yield "".join(buf).encode("utf-8")
                    buf, size = [], 0
            tid, rewards, passed = t, [], 0
        rewards.append(reward)
        passed += f & 1
    if tid is not None:
        buf.append(_group_piece(tid, rewards, passed, singles))
    if buf:
        yield "".join(buf).encode("utf-8")


def _group_piece(tid: str, rewards: list[float], passed: int, singles: dict[tuple[float, int], tuple[str, str]]) -> str:
    """``_SEP + group_text(_group(tid, rewards, passed))``; for one attempt, from ``singles``
    (the text before and after the task id, by reward and pass; -0.0, whose text differs from
    0.0's though the keys are equal, is never remembered)."""
    if len(rewards) == 1:
        r = rewards[0]
        key = (r, passed)
        got = singles.get(key)
        if got is None:
            text = group_text(_group("", rewards, passed))
            cut = text.index('"task_id": ""') + len('"task_id": ')
            got = (_SEP + text[:cut], text[cut + 2 :])
            if r != 0.0 or math.copysign(1.0, r) > 0:
                singles[key] = got
        return got[0] + _quote(tid) + got[1]
    return _SEP + group_text(_group(tid, rewards, passed))


def training_blocks(ids: list[str], rewards: Any, flags: Any) -> Iterator[bytes]:
    """The report's ``trainingRows`` (one per task: chosen when its row passed and was not
    self-report-only, flags 1) as UTF-8 blocks of about a megabyte, each item preceded by ``_SEP``."""
    buf: list[str] = []
    size = 0
    for k in range(len(ids)):
        reward: float = rewards[k]
        piece = (
            _TRAINING_CHOSEN_SEP if flags[k] == 1 else _TRAINING_REJECTED_SEP
        ) + f'{reward!r},\n{_I3}"taskId": {_quote(ids[k])}\n{_I2}}}'
        buf.append(piece)
        size += len(piece)
        if size >= _BLOCK:
            yield "".join(buf).encode("utf-8")
            buf, size = [], 0
    if buf:
        yield "".join(buf).encode("utf-8")

"""A step's stored JSON without pydantic, for the partial steps whose result can be proved to be pydantic's.

:func:`fast_rest` takes a partial step (what :meth:`~._trajectories.TrajectoryRepository.import_trajectory`
receives) and returns the text :meth:`~._trajectories.TrajectoryRepository._prepare_bulk` would store for
it after ``step_id`` and ``timestamp`` (``Step.model_validate`` then ``model_dump_json(exclude_none=True,
exclude={"step_id", "timestamp"})``), or ``None`` when it cannot prove that (then the caller validates
with pydantic as before, which gives the same text or the error). It proves it by exact checks, each one a
case where pydantic keeps the value as it is:

- only ``Step`` fields (``step_id`` is ignored, as the store numbers steps), each of its plain JSON type
  with the exact class (``str`` not a subclass, ``int`` not ``bool``, ``float`` for ``reward``: an ``int``
  reward, which pydantic turns into a float, goes the pydantic way), the literals among their values;
- tool calls and observation results as objects of their own fields only, with the same exact types;
- ``metrics``, ``extra`` and ``arguments`` objects; their values (``Any`` in the model) are written by
  orjson, whose text is pydantic's for every JSON value (strings, integers within 64 bits,
  finite floats: checked against pydantic on 400,000 floats and every code point class, see the tests);
  anything orjson will not write as pydantic does (integers beyond 64 bits, non-string keys, subclasses,
  dates, dataclasses) raises in orjson and goes the pydantic way;
- the pairing rules of :func:`~._trajectories._pairs_up` (distinct call ids, results naming one of them or
  none); a step breaking them goes the pydantic way, which rejects it.

The field order of the output is the model's, ``None`` fields left out (nested ``None`` values inside
``Any`` objects are kept, as pydantic keeps them). The strings the redactor scans are collected on the
way (the same ones :func:`~._redact._scanned` finds), for the redaction screen.
"""

from __future__ import annotations

from typing import Any

import orjson

from agent_rl_sandbox.tools.store._redact import _scanned

_SOURCES = frozenset({"user", "agent", "system"})
_PROVENANCES = frozenset({"server", "hook", "agent"})
_OUTCOMES = frozenset({"ok", "error", "refused", "limit", "cancelled", "unknown"})
_STEP_KEYS = frozenset(
    {
        "step_id",
        "timestamp",
        "source",
        "message",
        "tool_calls",
        "observation",
        "metrics",
        "extra",
        "provenance",
        "outcome",
        "exit_code",
        "state_ref",
        "reward",
        "done",
        "client_step_id",
    }
)
_CALL_KEYS = frozenset({"tool_call_id", "function_name", "arguments"})
_RESULT_KEYS = frozenset({"source_call_id", "content", "subagent_trajectory_ref"})
_OBS_KEYS = frozenset({"results"})
_OPTS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
"""Anything but plain JSON values raises (``TypeError``) instead of being written orjson's own way."""


def fast_rest(item: dict[str, Any], strings: list[str]) -> str | None:
    """The stored JSON of ``item`` without ``step_id`` and ``timestamp`` (``{"source":...}``), byte for
    byte pydantic's, or ``None`` when it is not provably so (rules in the module docstring). Appends to
    ``strings`` the strings of ``item`` the redactor scans (:func:`~._redact._scanned`'s),
    also when it returns ``None`` (the caller drops them then)."""
    if not _STEP_KEYS.issuperset(item):
        return None
    get = item.get
    if "timestamp" in item and item["timestamp"].__class__ is not str:  # None too: the store refuses it
        return None
    source = get("source", "agent")
    message = get("message", "")
    if source.__class__ is not str or source not in _SOURCES or message.__class__ is not str:
        return None
    out: dict[str, Any] = {"source": source, "message": message}
    if len(message) >= 8:
        strings.append(message)
    calls = get("tool_calls")
    ids: set[str] = set()
    if calls is not None:
        if calls.__class__ is not list:
            return None
        built = []
        for c in calls:
            if c.__class__ is not dict or not _CALL_KEYS.issuperset(c):
                return None
            cid, name = c.get("tool_call_id"), c.get("function_name")
            args = c.get("arguments", {})
            if cid.__class__ is not str or name.__class__ is not str or args.__class__ is not dict:
                return None
            if cid in ids:
                return None
            ids.add(cid)
            if args:
                _scanned(args, strings)
            built.append({"tool_call_id": cid, "function_name": name, "arguments": args})
        out["tool_calls"] = built
    obs = get("observation")
    if obs is not None:
        if obs.__class__ is not dict or not _OBS_KEYS.issuperset(obs):
            return None
        results = obs.get("results", [])
        if results.__class__ is not list:
            return None
        rs = []
        for r in results:
            if r.__class__ is not dict or not _RESULT_KEYS.issuperset(r):
                return None
            rd: dict[str, Any] = {}
            sid = r.get("source_call_id")
            if sid is not None:
                if sid.__class__ is not str or sid not in ids:
                    return None
                rd["source_call_id"] = sid
            content = r.get("content")
            if content is not None:
                if content.__class__ is not str:
                    return None
                rd["content"] = content
                if len(content) >= 8:
                    strings.append(content)
            ref = r.get("subagent_trajectory_ref")
            if ref is not None:
                if ref.__class__ is not list:
                    return None
                for x in ref:
                    if x.__class__ is not dict:
                        return None
                _scanned(ref, strings)
                rd["subagent_trajectory_ref"] = ref
            rs.append(rd)
        out["observation"] = {"results": rs}
    metrics = get("metrics")
    if metrics is not None:
        if metrics.__class__ is not dict:
            return None
        out["metrics"] = metrics
        _scanned(metrics, strings)
    extra = get("extra", {})
    if extra.__class__ is not dict:
        return None
    out["extra"] = extra
    if extra:
        _scanned(extra, strings)
    prov = get("provenance", "server")
    outcome = get("outcome", "ok")
    if (
        prov.__class__ is not str
        or prov not in _PROVENANCES
        or outcome.__class__ is not str
        or outcome not in _OUTCOMES
    ):
        return None
    out["provenance"] = prov
    out["outcome"] = outcome
    code = get("exit_code")
    if code is not None:
        if code.__class__ is not int:
            return None
        out["exit_code"] = code
    ref_ = get("state_ref")
    if ref_ is not None:
        if ref_.__class__ is not str:
            return None
        out["state_ref"] = ref_
    reward = get("reward")
    if reward is not None:
        if reward.__class__ is not float:
            return None
        out["reward"] = reward
    done = get("done", False)
    if done.__class__ is not bool:
        return None
    out["done"] = done
    cid_ = get("client_step_id")
    if cid_ is not None:
        if cid_.__class__ is not str:
            return None
        out["client_step_id"] = cid_
    try:
        return orjson.dumps(out, option=_OPTS).decode()
    except TypeError:  # orjson.JSONEncodeError: beyond 64 bits, a key that is not a string, not a JSON value
        return None

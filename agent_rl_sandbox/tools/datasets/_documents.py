"""Checks for trajectory documents: ATIF trajectories and Port Daddy trajectory suites.

ATIF rules follow harbor's pydantic models (``harbor/models/trajectories``, ATIF v1.5; RFC 0001):
required root and step fields, ``source`` in system/user/agent, ``step_id`` sequential from 1, ISO 8601
``timestamp``, agent-only fields (``model_name``, ``reasoning_effort``, ``reasoning_content``,
``tool_calls``, ``metrics``) only on agent steps, no duplicate ``tool_call_id`` within a step, and every
observation ``source_call_id`` naming a tool call of the same step (those two pairing rules are the ATIF
reader's, :func:`agent_rl_sandbox.tools.formats.atif.integrity_issues`, shared with import and score). Beyond harbor: tool calls name a tool
in ``agent.tool_definitions`` (when given) and their arguments satisfy its ``parameters``.

Trajectory suites are read by ``_suite.read_suite`` (the project's suite model plus the values Port
Daddy's harness would misread), the same reader the evals harness scores with.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from agent_rl_sandbox.tools.formats.atif import integrity_issues

from ._params import check_arguments, json_type
from ._rules import RowCtx, RowInfo, ToolSet, _check_decls_visible, _text_of, normalise
from ._suite import read_suite

ATIF_VERSIONS = frozenset({f"ATIF-v1.{i}" for i in range(8)})
"""Versions harbor's models list (v1.0 to v1.7); others get an ``unknown_version`` warning."""
_STEP_KEYS = frozenset(
    {
        "step_id",
        "timestamp",
        "source",
        "model_name",
        "reasoning_effort",
        "message",
        "reasoning_content",
        "tool_calls",
        "observation",
        "metrics",
        "is_copied_context",
        "llm_call_count",
        "extra",
    }
)
_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


def _is_int(v: Any) -> bool:
    return type(v) is int or (type(v) is float and v.is_integer())


def check_atif(ctx: RowCtx, row: dict) -> RowInfo:
    """Check one ATIF trajectory (a whole document, or one JSONL line holding one)."""
    info = RowInfo()
    version = row["schema_version"]
    if type(version) is not str:
        ctx.err("$.schema_version", "wrong_type", "schema_version must be a string")
    elif not version.startswith("ATIF-v"):
        ctx.err("$.schema_version", "bad_value", f"schema_version {version!r:.40} does not start with 'ATIF-v'")
    elif version not in ATIF_VERSIONS:
        ctx.warn("$.schema_version", "unknown_version", f"{version} is not a version harbor documents")
    if type(row["session_id"]) is not str:
        ctx.err("$.session_id", "wrong_type", "session_id must be a string")
    for key in ("notes",):
        if key in row and row[key] is not None and type(row[key]) is not str:
            ctx.err(f"$.{key}", "wrong_type", f"{key} must be a string")
    for key in ("final_metrics", "extra"):
        if key in row and row[key] is not None and type(row[key]) is not dict:
            ctx.err(f"$.{key}", "wrong_type", f"{key} must be an object")
    tools: ToolSet | None = None
    agent = row["agent"]
    if type(agent) is not dict:
        ctx.err("$.agent", "wrong_type", "agent must be an object")
    else:
        for key in ("name", "version"):
            if key not in agent:
                ctx.err("$.agent", "missing_key", f"agent lacks '{key}'")
            elif type(agent[key]) is not str:
                ctx.err(f"$.agent.{key}", "wrong_type", f"agent.{key} must be a string")
        if "model_name" in agent and agent["model_name"] is not None and type(agent["model_name"]) is not str:
            ctx.err("$.agent.model_name", "wrong_type", "model_name must be a string")
        defs = agent.get("tool_definitions")
        if defs is not None:
            if type(defs) is not list:
                ctx.err("$.agent.tool_definitions", "wrong_type", "tool_definitions must be a list")
            else:
                bad = False
                for j, d in enumerate(defs):
                    if type(d) is not dict:
                        ctx.err(f"$.agent.tool_definitions[{j}]", "wrong_type", "tool definitions must be objects")
                        bad = True
                if not bad:
                    found: list = []
                    names = _check_decls_visible(ctx, defs, "$.agent.tool_definitions", False, found)
                    for path, code, message, severity in found:
                        # Inside tool_definitions the schema only asks for objects: report the rest as rules.
                        if code in ("missing_key", "wrong_type", "bad_value"):
                            code = "bad_tool_declaration"
                        ctx.err(path, code, message, severity)
                    text = json.dumps(defs, ensure_ascii=False)
                    tools = ToolSet(names, len(text), text)
                    info.has_tools = True
    steps = row["steps"]
    if type(steps) is not list:
        ctx.err("$.steps", "wrong_type", "steps must be a list")
        return info
    if not steps:
        ctx.err("$.steps", "empty_list", "steps is empty")
        return info
    total = 0
    prompt_text: str | None = None
    undeclared_warned = False
    for i, step in enumerate(steps):
        p = f"$.steps[{i}]"
        if type(step) is not dict:
            ctx.err(p, "wrong_type", f"step must be an object, got {json_type(step)}")
            continue
        for key in ("step_id", "source", "message"):
            if key not in step:
                ctx.err(p, "missing_key", f"step lacks '{key}'")
        for key in step:
            if key not in _STEP_KEYS:
                ctx.warn(f"{p}.{key}", "unknown_field", f"'{key}' is not an ATIF step field (harbor forbids extras)")
        sid = step.get("step_id")
        if "step_id" in step:
            if type(sid) is bool or not _is_int(sid):
                ctx.err(f"{p}.step_id", "wrong_type", "step_id must be an integer")
            elif sid is not None and sid < 1:
                ctx.err(f"{p}.step_id", "bad_value", "step_id starts at 1")
            elif sid != i + 1:
                ctx.err(
                    f"{p}.step_id", "step_id_not_sequential", f"expected step_id {i + 1} (sequential from 1), got {sid}"
                )
        source = step.get("source")
        if "source" in step:
            if source not in ("system", "user", "agent"):
                ctx.err(f"{p}.source", "bad_value", f"source {source!r:.30} is not system, user or agent")
            else:
                ctx.v.count_role(source)
        ts = step.get("timestamp")
        if ts is not None:
            if type(ts) is not str:
                ctx.err(f"{p}.timestamp", "wrong_type", "timestamp must be a string")
            else:
                try:
                    datetime.fromisoformat(ts.replace("Z", "+00:00"))
                except ValueError:
                    ctx.err(f"{p}.timestamp", "bad_timestamp", f"{ts!r:.40} is not an ISO 8601 timestamp")
        message = step.get("message")
        if "message" in step and type(message) not in (str, list):
            ctx.err(f"{p}.message", "wrong_type", "message must be a string or a list of content parts")
        text = _text_of(message) or ""
        total += len(text)
        if source == "user" and prompt_text is None and text:
            prompt_text = text
        for key in ("model_name", "reasoning_content"):
            if key in step and step[key] is not None and type(step[key]) is not str:
                ctx.err(f"{p}.{key}", "wrong_type", f"{key} must be a string")
        for key in ("metrics", "extra"):
            if key in step and step[key] is not None and type(step[key]) is not dict:
                ctx.err(f"{p}.{key}", "wrong_type", f"{key} must be an object")
        if source in ("system", "user"):
            for key in _AGENT_ONLY:
                if step.get(key) is not None:
                    ctx.err(
                        f"{p}.{key}", "agent_only_field", f"'{key}' is only allowed on agent steps (source is {source})"
                    )
        calls = step.get("tool_calls")
        if calls is not None:
            if type(calls) is not list:
                ctx.err(f"{p}.tool_calls", "wrong_type", "tool_calls must be a list")
                calls = []
            if calls:
                ctx.v.rows_called = True
            for j, call in enumerate(calls):
                cp = f"{p}.tool_calls[{j}]"
                if type(call) is not dict:
                    ctx.err(cp, "wrong_type", "tool call must be an object")
                    continue
                for key in ("tool_call_id", "function_name", "arguments"):
                    if key not in call:
                        ctx.err(cp, "missing_key", f"tool call lacks '{key}'")
                cid, name, args = call.get("tool_call_id"), call.get("function_name"), call.get("arguments")
                if "tool_call_id" in call:
                    if type(cid) is not str:
                        ctx.err(f"{cp}.tool_call_id", "wrong_type", "tool_call_id must be a string")
                if "function_name" in call:
                    if type(name) is not str:
                        ctx.err(f"{cp}.function_name", "wrong_type", "function_name must be a string")
                    else:
                        ctx.v.count_tool(name)
                        total += len(name)
                        if tools is None:
                            if not undeclared_warned:
                                undeclared_warned = True
                                ctx.warn(
                                    f"{cp}.function_name",
                                    "tools_not_declared",
                                    "agent.tool_definitions is absent: tool names cannot be checked",
                                )
                        elif name not in tools.names:
                            ctx.err(
                                f"{cp}.function_name", "undeclared_tool", f"'{name}' is not in agent.tool_definitions"
                            )
                if "arguments" in call:
                    if type(args) is not dict:
                        ctx.err(
                            f"{cp}.arguments",
                            "arguments_wrong_form",
                            f"ATIF arguments are an object, got {json_type(args)}",
                        )
                    else:
                        total += len(json.dumps(args, ensure_ascii=False))
                        params = tools.names.get(name) if tools is not None and type(name) is str else None
                        if type(params) is dict:
                            problem = check_arguments(args, params)
                            if problem:
                                ctx.err(
                                    f"{cp}.arguments",
                                    "arguments_schema",
                                    f"arguments do not satisfy {name}'s parameters: {problem}",
                                )
        obs = step.get("observation")
        if obs is not None:
            op = f"{p}.observation"
            if type(obs) is not dict:
                ctx.err(op, "wrong_type", "observation must be an object")
            elif "results" not in obs:
                ctx.err(op, "missing_key", "observation lacks 'results'")
            elif type(obs["results"]) is not list:
                ctx.err(f"{op}.results", "wrong_type", "results must be a list")
            else:
                for j, res in enumerate(obs["results"]):
                    rp = f"{op}.results[{j}]"
                    if type(res) is not dict:
                        ctx.err(rp, "wrong_type", "result must be an object")
                        continue
                    src = res.get("source_call_id")
                    if src is not None and type(src) is not str:
                        ctx.err(f"{rp}.source_call_id", "wrong_type", "source_call_id must be a string")
                    content = res.get("content")
                    if content is not None and type(content) not in (str, list):
                        ctx.err(f"{rp}.content", "wrong_type", "content must be a string or a list of parts")
                    total += len(_text_of(content) or "")
        # The pairing rules (duplicate call ids, results naming no call) are the ATIF reader's, shared
        # with import and score, so all three report the same finding code.
        for issue in integrity_issues(step, p):
            ctx.err(issue.path, issue.code, issue.message)
    info.total_chars = total + (tools.chars if tools else 0)
    info.prompt_chars = info.total_chars
    if ctx.need_key and prompt_text:
        info.prompt_key = normalise(prompt_text)
    return info


def check_trajectory_suite(ctx: RowCtx, row: dict) -> RowInfo:
    """Check a Port Daddy trajectory suite with :func:`._suite.read_suite`, the reader ``score`` uses too.

    Structure is the project's suite model (``agent_rl_sandbox.schemas.reward.PortDaddySuite``, whose
    JSON Schema is the ``trajectory_suite`` schema file); beyond it, values Port Daddy's harness would
    misread are errors, and repeated task ids and trajectories naming no task are warnings (see
    ``_suite``). The evals harness refuses to score a suite this check reports an error for.
    """
    info = RowInfo()
    read = read_suite(row)
    info.document = read.suite  # None when there is an error; score reuses it (one model validation)
    for path, code, message in read.errors:
        ctx.err(path, code, message)
    for path, code, message in read.warnings:
        ctx.warn(path, code, message)
    trajs = row.get("trajectories")
    if type(trajs) is list:
        for traj in trajs:
            actions = traj.get("actions") if type(traj) is dict else None
            if type(actions) is list:
                for action in actions:
                    if type(action) is dict and type(action.get("tool")) is str:
                        ctx.v.count_tool(action["tool"])
    return info

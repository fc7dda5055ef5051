"""JSON Schema (draft 2020-12) of every dataset kind: built here, stored in ``agent_rl_sandbox/schemas/datasets``.

The files are the public contract (one ``<kind>.schema.json`` per kind); this module is their single
source and a test checks the files equal ``build_schema(kind)``. Regenerate with
``python -m agent_rl_sandbox.tools.datasets._schemas``.

The schemas describe *structure* (keys, types, enums, non-empty lists). The validator's hand-written
checks agree with them on every structural error (tested); its further rules (alternation, tool-call
matching, duplicates, leakage...) are documented in ``docs/dataset-validation.md``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ._kinds import KIND_INFO, KINDS
from ._openai_rules import MAX_FUNCTIONS, MESSAGE_KEYS, WEIGHT_VALUES
from ._openai_rules import ROLES as OPENAI_ROLES

SCHEMA_PACKAGE = "agent_rl_sandbox.schemas"
SCHEMA_SUBDIR = "datasets"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

TRL_ROLES = ("system", "user", "assistant", "tool")
"""Roles TRL's chat templates render (TRL dataset_formats.md; tool messages per 'Tool Calling')."""
MINIMIND_ROLES = ("system", "user", "assistant", "tool")
"""Roles of MiniMind's chat template (README SFT examples, including the tool role)."""


def _s(*types: str) -> dict:
    return {"type": list(types) if len(types) > 1 else types[0]}


def _tool_decl_lenient() -> dict:
    inner = {
        "name": _s("string"),
        "description": _s("string"),
        "parameters": _s("object"),
    }
    return {
        "type": "object",
        "properties": {"type": {"const": "function"}},
        "if": {"required": ["function"]},
        "then": {"properties": {"function": {"type": "object", "required": ["name"], "properties": inner}}},
        "else": {"required": ["name"], "properties": inner},
    }


def _trl_defs() -> dict:
    args = _s("object", "string")
    return {
        "message": {
            "type": "object",
            "required": ["role"],
            "properties": {
                "role": {"enum": list(TRL_ROLES)},
                "content": {"type": ["string", "null", "array"], "items": _s("object")},
                "tool_calls": {"type": ["array", "null"], "items": {"$ref": "#/$defs/tool_call"}},
                "name": _s("string", "null"),
                "tool_call_id": _s("string", "null"),
            },
        },
        "tool_call": {
            "type": "object",
            "properties": {"type": {"const": "function"}},
            "if": {"required": ["function"]},
            "then": {
                "properties": {
                    "function": {
                        "type": "object",
                        "required": ["name", "arguments"],
                        "properties": {"name": _s("string"), "arguments": args},
                    }
                }
            },
            "else": {"required": ["name", "arguments"], "properties": {"name": _s("string"), "arguments": args}},
        },
        "conversation": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/message"}},
        "tools": {"type": ["array", "string", "null"], "items": {"$ref": "#/$defs/tool"}},
        "tool": _tool_decl_lenient(),
    }


def _minimind_defs() -> dict:
    return {
        "message": {
            "type": "object",
            "required": ["role", "content"],
            "properties": {
                "role": {"enum": list(MINIMIND_ROLES)},
                "content": _s("string", "null"),
                "tool_calls": _s("string", "null"),
                "tools": _s("string", "null"),
            },
        },
        "conversation": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/message"}},
    }


def _openai_defs() -> dict:
    props: dict[str, Any] = {
        "role": {"enum": sorted(OPENAI_ROLES)},
        "content": {"type": ["string", "null", "array"], "items": _s("object")},
        "name": _s("string"),
        "weight": {"enum": list(WEIGHT_VALUES)},
        "tool_calls": {"type": "array", "items": {"$ref": "#/$defs/tool_call"}},
        "tool_call_id": _s("string"),
        "function_call": _s("object"),
        "refusal": _s("string", "null"),
        "audio": _s("object", "null"),
    }
    assert set(props) == set(MESSAGE_KEYS)
    return {
        "message": {
            "type": "object",
            "required": ["role"],
            "additionalProperties": False,
            "properties": props,
            "if": {"required": ["role"], "properties": {"role": {"const": "tool"}}},
            "then": {"required": ["tool_call_id"]},
        },
        "tool_call": {
            "type": "object",
            "required": ["id", "type", "function"],
            "properties": {
                "id": _s("string"),
                "type": {"const": "function"},
                "function": {
                    "type": "object",
                    "required": ["name", "arguments"],
                    "properties": {"name": _s("string"), "arguments": _s("string")},
                },
            },
        },
        "tool": {
            "type": "object",
            "required": ["type", "function"],
            "properties": {
                "type": {"const": "function"},
                "function": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": _s("string"),
                        "description": _s("string"),
                        "parameters": _s("object"),
                        "strict": _s("boolean", "null"),
                    },
                },
            },
        },
    }


def _styles(keys: tuple[str, ...], conv_ref: str) -> list[dict]:
    """Standard (all strings) or conversational (all message lists) alternatives over ``keys``."""
    return [
        {"properties": {k: _s("string") for k in keys}},
        {"properties": {k: {"$ref": conv_ref} for k in keys}},
    ]


def _wrap(kind: str, body: dict, defs: dict | None = None) -> dict:
    info = KIND_INFO[kind]
    out = {
        "$schema": DRAFT,
        "$id": f"https://agent-rl-sandbox.dev/schemas/datasets/{kind}.schema.json",
        "title": kind,
        "description": f"{info.description}. Source: {info.source}.",
        **body,
    }
    if defs:
        out["$defs"] = defs
    return out


def build_schema(kind: str) -> dict:
    """The JSON Schema of one row (or document) of ``kind``. Raises ``KeyError`` for an unknown kind."""
    conv = "#/$defs/conversation"
    if kind == "trl.language_modeling":
        return _wrap(
            kind,
            {
                "type": "object",
                "if": {"required": ["messages"]},
                "then": {"properties": {"messages": {"$ref": conv}, "tools": {"$ref": "#/$defs/tools"}}},
                "else": {"required": ["text"], "properties": {"text": _s("string")}},
            },
            _trl_defs(),
        )
    if kind == "trl.prompt_only":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["prompt"],
                "properties": {
                    "prompt": {"anyOf": [_s("string"), {"$ref": conv}]},
                    "tools": {"$ref": "#/$defs/tools"},
                },
            },
            _trl_defs(),
        )
    if kind == "trl.prompt_completion":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["prompt", "completion"],
                "properties": {"tools": {"$ref": "#/$defs/tools"}},
                "anyOf": _styles(("prompt", "completion"), conv),
            },
            _trl_defs(),
        )
    if kind == "trl.preference":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["chosen", "rejected"],
                "properties": {"tools": {"$ref": "#/$defs/tools"}},
                "anyOf": _styles(("prompt", "chosen", "rejected"), conv),
            },
            _trl_defs(),
        )
    if kind == "trl.unpaired_preference":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["prompt", "completion", "label"],
                "properties": {"label": _s("boolean"), "tools": {"$ref": "#/$defs/tools"}},
                "anyOf": _styles(("prompt", "completion"), conv),
            },
            _trl_defs(),
        )
    if kind == "trl.stepwise_supervision":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["prompt", "completions", "labels"],
                "properties": {
                    "prompt": _s("string"),
                    "completions": {"type": "array", "minItems": 1, "items": _s("string")},
                    "labels": {"type": "array", "items": _s("boolean")},
                },
            },
        )
    if kind in ("minimind.sft", "minimind.rlaif"):
        return _wrap(
            kind,
            {"type": "object", "required": ["conversations"], "properties": {"conversations": {"$ref": conv}}},
            _minimind_defs(),
        )
    if kind == "minimind.agentic":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["conversations", "gt"],
                "properties": {"conversations": {"$ref": conv}, "gt": _s("array")},
            },
            _minimind_defs(),
        )
    if kind == "minimind.dpo":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["chosen", "rejected"],
                "properties": {"chosen": {"$ref": conv}, "rejected": {"$ref": conv}},
            },
            _minimind_defs(),
        )
    if kind == "openai.chat":
        return _wrap(
            kind,
            {
                "type": "object",
                "required": ["messages"],
                "properties": {
                    "messages": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/message"}},
                    "tools": {"type": "array", "maxItems": MAX_FUNCTIONS, "items": {"$ref": "#/$defs/tool"}},
                    "parallel_tool_calls": _s("boolean"),
                    "functions": {"type": "array", "maxItems": MAX_FUNCTIONS, "items": _s("object")},
                },
            },
            _openai_defs(),
        )
    if kind == "atif":
        return _wrap(kind, _atif_body(), _atif_defs())
    if kind == "trajectory_suite":
        return _wrap(kind, suite_model_schema())
    raise KeyError(kind)


def suite_model_schema() -> dict:
    """JSON Schema of the project's Port Daddy suite model (``agent_rl_sandbox.schemas.reward.PortDaddySuite``).

    The suite format has one truth, that pydantic model (the evals harness loads suites with it); the
    ``trajectory_suite`` schema file is generated from it, like ``schemas/port_daddy_suite.schema.json``.
    """
    from agent_rl_sandbox.schemas.reward import PortDaddySuite

    body = PortDaddySuite.model_json_schema(by_alias=True)
    body.pop("title", None)
    body.pop("description", None)
    return body


def _atif_body() -> dict:
    return {
        "type": "object",
        "required": ["schema_version", "session_id", "agent", "steps"],
        "properties": {
            "schema_version": {"type": "string", "pattern": "^ATIF-v"},
            "session_id": _s("string"),
            "agent": {
                "type": "object",
                "required": ["name", "version"],
                "properties": {
                    "name": _s("string"),
                    "version": _s("string"),
                    "model_name": _s("string", "null"),
                    "tool_definitions": {"type": ["array", "null"], "items": _s("object")},
                },
            },
            "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
            "notes": _s("string", "null"),
            "final_metrics": _s("object", "null"),
            "extra": _s("object", "null"),
        },
    }


def _atif_defs() -> dict:
    return {
        "step": {
            "type": "object",
            "required": ["step_id", "source", "message"],
            "properties": {
                "step_id": {"type": "integer", "minimum": 1},
                "timestamp": _s("string", "null"),
                "source": {"enum": ["system", "user", "agent"]},
                "model_name": _s("string", "null"),
                "message": _s("string", "array"),
                "reasoning_content": _s("string", "null"),
                "tool_calls": {"type": ["array", "null"], "items": {"$ref": "#/$defs/tool_call"}},
                "observation": {
                    "type": ["object", "null"],
                    "required": ["results"],
                    "properties": {"results": {"type": "array", "items": {"$ref": "#/$defs/result"}}},
                },
                "metrics": _s("object", "null"),
                "extra": _s("object", "null"),
            },
        },
        "tool_call": {
            "type": "object",
            "required": ["tool_call_id", "function_name", "arguments"],
            "properties": {
                "tool_call_id": _s("string"),
                "function_name": _s("string"),
                "arguments": _s("object"),
            },
        },
        "result": {
            "type": "object",
            "properties": {
                "source_call_id": _s("string", "null"),
                "content": _s("string", "array", "null"),
            },
        },
    }


def schema_filename(kind: str) -> str:
    """File name of a kind's schema: ``<kind>.schema.json`` (e.g. ``trl.preference.schema.json``)."""
    return f"{kind}.schema.json"


@cache
def load_schema(kind: str) -> dict:
    """The installed JSON Schema file of ``kind`` (parsed). Raises ``KeyError`` for an unknown kind."""
    if kind not in KINDS:
        raise KeyError(kind)
    ref = resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_SUBDIR, schema_filename(kind))
    return json.loads(ref.read_text(encoding="utf-8"))


def schema_path(kind: str) -> Path:
    """Filesystem path of a kind's installed schema file."""
    return Path(str(resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_SUBDIR, schema_filename(kind))))


def write_schemas(directory: Path | None = None) -> list[Path]:
    """Write every kind's schema file (sorted keys, 2-space indent) and return the paths written."""
    directory = directory or schema_path(KINDS[0]).parent
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for kind in KINDS:
        path = directory / schema_filename(kind)
        path.write_text(json.dumps(build_schema(kind), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        out.append(path)
    return out


if __name__ == "__main__":  # pragma: no cover
    for p in write_schemas():
        print(p)

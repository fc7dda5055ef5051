"""A small, fast JSON Schema subset for checking tool-call arguments against a tool's ``parameters``.

Tool parameter schemas (OpenAI function calling, TRL's ``get_json_schema``, MiniMind tool lists, ATIF
``tool_definitions``) use a small part of JSON Schema. This checks that part directly, about 50 times
faster than ``jsonschema`` on typical arguments, which matters on the per-row hot path.

Supported keywords: ``type`` (string or list; ``integer`` accepts integral floats, booleans are never
numbers), ``enum``, ``const``, ``properties``, ``required``, ``additionalProperties`` (``false`` or a
schema), ``items`` (a schema), ``minItems``, ``maxItems``, ``minLength``, ``maxLength``, ``minimum``,
``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` (numbers), ``anyOf``, ``oneOf`` (treated as
``anyOf``), ``allOf``, ``nullable`` (OpenAPI). Other keywords (``$ref``, ``pattern``, ``format``...) are
ignored, so a value is never rejected for a keyword this module does not know.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 32
"""Schemas or values nested deeper than this are not checked further (no recursion blow-up)."""

_TYPE_NAMES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "array",
    dict: "object",
    type(None): "null",
}


def json_type(value: Any) -> str:
    """JSON type name of a parsed value (``integer`` for ints, ``number`` for floats, ``other`` otherwise)."""
    return _TYPE_NAMES.get(type(value), "other")


def _type_ok(value: Any, expected: str) -> bool:
    t = type(value)
    if expected == "string":
        return t is str
    if expected == "integer":
        return t is int or (t is float and value.is_integer())
    if expected == "number":
        return t is int or t is float
    if expected == "boolean":
        return t is bool
    if expected == "object":
        return t is dict
    if expected == "array":
        return t is list
    if expected == "null":
        return value is None
    return True  # unknown type names never reject


_BOUNDS: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
    ("minimum", operator.ge),
    ("maximum", operator.le),
    ("exclusiveMinimum", operator.gt),
    ("exclusiveMaximum", operator.lt),
)
"""Numeric bounds in the order they are checked: (keyword, ``ok(value, bound)``)."""


def _equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return a == b


def check_arguments(value: Any, schema: Any, path: str = "", depth: int = 0) -> str | None:
    """First problem of ``value`` against ``schema`` as ``"<path>: <reason>"``, or ``None`` when it passes.

    ``path`` is a dotted path inside the arguments (``""`` for the root). A schema that is not an object
    accepts everything. Never raises.
    """
    if depth > MAX_DEPTH or type(schema) is not dict:
        return None
    where = path or "arguments"
    if value is None and schema.get("nullable") is True:
        return None
    expected = schema.get("type")
    if type(expected) is str:
        if not _type_ok(value, expected):
            return f"{where}: expected {expected}, got {json_type(value)}"
    elif type(expected) is list and expected:
        if not any(_type_ok(value, e) for e in expected if type(e) is str):
            return f"{where}: expected {' or '.join(str(e) for e in expected)}, got {json_type(value)}"
    enum = schema.get("enum")
    if type(enum) is list and not any(_equal(value, e) for e in enum):
        shown = ", ".join(repr(e) for e in enum[:8])
        return f"{where}: {value!r:.60} is not one of [{shown}]"
    if "const" in schema and not _equal(value, schema["const"]):
        return f"{where}: must be {schema['const']!r:.60}"
    t = type(value)
    if t is dict:
        props = schema.get("properties")
        props = props if type(props) is dict else {}
        required = schema.get("required")
        if type(required) is list:
            for key in required:
                if type(key) is str and key not in value:
                    return f"{where}: missing required '{key}'"
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = props.get(key)
            if sub is not None:
                problem = check_arguments(item, sub, f"{path}.{key}" if path else key, depth + 1)
                if problem:
                    return problem
            elif extra is False:
                return f"{where}: unexpected property '{key}'"
            elif type(extra) is dict:
                problem = check_arguments(item, extra, f"{path}.{key}" if path else key, depth + 1)
                if problem:
                    return problem
    elif t is list:
        n = len(value)
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        if type(lo) is int and n < lo:
            return f"{where}: {n} items, fewer than {lo}"
        if type(hi) is int and n > hi:
            return f"{where}: {n} items, more than {hi}"
        items = schema.get("items")
        if type(items) is dict:
            for i, item in enumerate(value):
                problem = check_arguments(item, items, f"{where}[{i}]", depth + 1)
                if problem:
                    return problem
    elif t is str:
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if type(lo) is int and len(value) < lo:
            return f"{where}: shorter than {lo} characters"
        if type(hi) is int and len(value) > hi:
            return f"{where}: longer than {hi} characters"
    elif t is int or t is float:
        for key, ok in _BOUNDS:
            bound = schema.get(key)
            if type(bound) in (int, float) and not ok(value, bound):
                return f"{where}: {value} violates {key} {bound}"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if type(options) is list and options:
            if all(check_arguments(value, o, path, depth + 1) for o in options):
                return f"{where}: matches none of the {key} alternatives"
    options = schema.get("allOf")
    if type(options) is list:
        for o in options:
            problem = check_arguments(value, o, path, depth + 1)
            if problem:
                return problem
    return None

"""``lean_schema`` (server/_lean_schema.py): every tool's listed output schema accepts exactly what
pydantic's schema of its output model accepts (checked with ``jsonschema``, the client's validator, on
valid instances built from the schema and on mutations of them), single-use ``$defs`` are inlined,
``T | None`` is a type list, and what must stay (shared or recursive ``$defs``, a ``$ref`` with checking
siblings, ``anyOf`` branches with constraints) stays."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from jsonschema.validators import validator_for
from referencing import Registry

from agent_rl_sandbox.server._lean_schema import lean_schema
from agent_rl_sandbox.server.app import TOOLS
from agent_rl_sandbox.server.lazy import fresh_tools_list


def _validator(schema: dict):
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=Registry())


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = {**root["$defs"][name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _example(schema: Any, root: dict, depth: int = 0) -> Any:
    """A value ``schema`` accepts (first branch of each ``anyOf``, every property filled)."""
    if not isinstance(schema, dict) or depth > 40:
        return None
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return copy.deepcopy(schema["default"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _example(schema[key][0], root, depth + 1)
    t = schema.get("type")
    t = t[0] if isinstance(t, list) else t
    if t == "object" or "properties" in schema:
        return {k: _example(v, root, depth + 1) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        item = _example(schema.get("items", {}), root, depth + 1)
        return [item] * max(1, schema.get("minItems", 1))
    if t == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if t in ("integer", "number"):
        lo, hi = schema.get("minimum", float("-inf")), schema.get("maximum", float("inf"))
        picks = [1, 0, lo, hi] if t == "integer" else [1.5, 0.5, 0, lo, hi]
        return next(x for x in picks if lo <= x <= hi)
    if t == "boolean":
        return True
    return None


def _paths(value: Any, path: tuple = ()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], (*path, 0))


def _set(value: Any, path: tuple, new: Any, *, delete: bool = False) -> Any:
    out = copy.deepcopy(value)
    if not path:
        return new
    node = out
    for p in path[:-1]:
        node = node[p]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = new
    return out


def _instances(schema: dict):
    """Valid examples and, for every place in them, wrong types, nulls, a removed key and an extra key."""
    base = _example(schema, schema)
    yield base
    for path in _paths(base):
        for new in (None, "s", 7, 2.5, True, [], {}, [None], {"unexpected": 1}):
            yield _set(base, path, new)
        if path:
            yield _set(base, path, None, delete=True)
        at = base
        for p in path:
            at = at[p]
        if isinstance(at, dict):
            yield _set(base, path, {**at, "zz_extra": 1})


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_lean_schema_accepts_what_pydantics_accepts(spec):
    original = spec.output_model.model_json_schema(mode="serialization")
    lean = lean_schema(original)
    assert lean_schema(original) == lean and original == spec.output_model.model_json_schema(mode="serialization")
    a, b = _validator(original), _validator(lean)
    n = 0
    for inst in _instances(original):
        assert a.is_valid(inst) == b.is_valid(inst), inst
        n += 1
    assert n > 10 and a.is_valid(_example(original, original))


def test_listed_output_schemas_are_lean_and_log_step_has_no_ref():
    listed = {t["name"]: t for t in fresh_tools_list()}
    for spec in TOOLS:
        schema = listed[spec.name]["outputSchema"]
        assert lean_schema(schema) == schema  # already in the lean form
    log_step = listed["trajectory_log_step"]["outputSchema"]
    assert "$defs" not in log_step and "anyOf" not in str(log_step)
    item = log_step["properties"]["steps"]["items"]
    assert item["properties"]["client_step_id"]["type"] == ["string", "null"]
    assert item["additionalProperties"] is False and item["required"] == ["step_id", "client_step_id", "created"]


def test_what_stays():
    leaf = {"type": "object", "properties": {"v": {"type": "integer"}}}
    schema = {
        "type": "object",
        "properties": {
            "shared1": {"$ref": "#/$defs/Shared"},
            "shared2": {"$ref": "#/$defs/Shared"},
            "tree": {"$ref": "#/$defs/Tree"},
            "once": {"$ref": "#/$defs/Once", "description": "kept over the entry's"},
            "checked": {"$ref": "#/$defs/Checked", "maxProperties": 1},
            "bounded": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
            "plain": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Plain"},
            "typed": {"type": "object", "anyOf": [{"type": "object"}, {"type": "null"}]},
        },
        "$defs": {
            "Shared": leaf,
            "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
            "Once": {**leaf, "description": "the entry's"},
            "Checked": leaf,
        },
    }
    lean = lean_schema(schema)
    assert set(lean["$defs"]) == {"Shared", "Tree", "Checked"}
    p = lean["properties"]
    assert p["shared1"] == p["shared2"] == {"$ref": "#/$defs/Shared"}
    assert p["tree"] == {"$ref": "#/$defs/Tree"}
    assert p["once"] == {**leaf, "description": "kept over the entry's"}
    assert p["checked"] == schema["properties"]["checked"]
    assert p["bounded"] == schema["properties"]["bounded"]
    assert p["plain"] == {"type": ["string", "null"], "title": "Plain"}
    assert p["typed"] == schema["properties"]["typed"]
    a, b = _validator(schema), _validator(lean)
    values = [None, "s", "long string", 1, {}, {"v": 1}, {"v": "x"}, {"kids": [{"kids": [{"v": 1}]}]}, {"a": 1, "b": 2}]
    for name in p:
        for v in values:
            assert a.is_valid({name: v}) == b.is_valid({name: v}), (name, v)
    for x, y in itertools.product(values, repeat=2):
        assert a.is_valid({"tree": {"kids": [x, y]}}) == b.is_valid({"tree": {"kids": [x, y]}})

"""An output schema that says the same as pydantic's but costs a JSON Schema validator less per result.

The MCP client re-validates every structured result against the tool's ``outputSchema`` with
``jsonschema`` (the SDK's ``ClientSession.validate_tool_result``). On ``trajectory_log_step``'s answer
that was ~45 us per call on the benchmark machine (~75 us within a loaded call), more than the tool's
SQLite transaction: each ``$ref`` is resolved through ``referencing`` and each ``anyOf`` branch is a
nested validation. :func:`lean_schema` rewrites two of pydantic's forms into ones that accept exactly
the same instances:

- a ``$defs`` entry referenced exactly once, and not from inside itself (directly or through other
  entries), is written in place of its ``{"$ref": ...}`` (whose siblings, if any, may only be
  annotations: ``title``, ``description``, ``default``, ``examples``; they override the entry's own);
  an entry referenced twice or more, or recursively, stays in ``$defs`` (so the schema never grows);
- ``anyOf`` whose every branch is exactly ``{"type": T}`` (pydantic's ``T | None``) becomes one
  ``"type": [T, ...]`` list, unless the same object already has a ``type``.

Titles, descriptions and every other keyword are kept as they were. Only the schema's form changes;
what it accepts, and so what the client checks, does not (tests/server/test_lean_schema.py).
"""

from __future__ import annotations

import copy
from typing import Any

_DEFS_PREFIX = "#/$defs/"
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
_VALUES = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose value is data, not a schema (never walked)."""
_MAPPINGS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names to schemas."""


def _ref_nodes(node: Any, out: list[tuple[str, frozenset[str]]]) -> None:
    """Append ``(name, sibling keys)`` for every ``{"$ref": "#/$defs/name", ...}`` in the schema ``node``."""
    if isinstance(node, list):
        for v in node:
            _ref_nodes(v, out)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
        out.append((ref[len(_DEFS_PREFIX) :], frozenset(node) - {"$ref"}))
    for k, v in node.items():
        if k in _VALUES:
            continue
        if k in _MAPPINGS and isinstance(v, dict):
            for sub in v.values():
                _ref_nodes(sub, out)
        else:
            _ref_nodes(v, out)


def _recursive(defs: dict[str, Any]) -> set[str]:
    """The ``$defs`` names that can reach themselves through ``$ref``s."""
    edges: dict[str, set[str]] = {}
    for name, body in defs.items():
        found: list[tuple[str, frozenset[str]]] = []
        _ref_nodes(body, found)
        edges[name] = {r for r, _ in found if r in defs}
    out = set()
    for start in defs:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            n = todo.pop()
            if n == start:
                out.add(start)
                break
            if n not in seen:
                seen.add(n)
                todo.extend(edges[n])
    return out


def _type_list(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with an ``anyOf`` of bare ``{"type": T}`` branches as one ``type`` list."""
    branches = node.get("anyOf")
    if (
        "type" not in node
        and isinstance(branches, list)
        and len(branches) > 1
        and all(isinstance(b, dict) and set(b) == {"type"} and isinstance(b["type"], str) for b in branches)
    ):
        types = list(dict.fromkeys(b["type"] for b in branches))
        return {("type" if k == "anyOf" else k): (types if k == "anyOf" else v) for k, v in node.items()}
    return node


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` (a JSON Schema object as pydantic writes it, local ``$ref``s into a root
    ``$defs``) in the leaner form described in the module docstring, accepting exactly the same
    instances. ``schema`` itself is not changed."""
    defs: dict[str, Any] = schema.get("$defs") or {}
    refs: list[tuple[str, frozenset[str]]] = []
    _ref_nodes(schema, refs)
    count: dict[str, int] = {}
    for name, _ in refs:
        count[name] = count.get(name, 0) + 1
    recursive = _recursive(defs)
    inline = {
        name
        for name, siblings in refs
        if name in defs
        and count[name] == 1
        and name not in recursive
        and siblings <= _ANNOTATIONS
        and isinstance(defs[name], dict)
    }

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX) and ref[len(_DEFS_PREFIX) :] in inline:
            siblings = {k: copy.deepcopy(v) for k, v in node.items() if k != "$ref"}
            return {**walk(defs[ref[len(_DEFS_PREFIX) :]]), **siblings}
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in _VALUES:
                out[k] = copy.deepcopy(v)
            elif k == "$defs" and node is schema:
                kept = {n: walk(d) for n, d in v.items() if n not in inline}
                if kept:
                    out[k] = kept
            elif k in _MAPPINGS and isinstance(v, dict):
                out[k] = {name: walk(sub) for name, sub in v.items()}
            else:
                out[k] = walk(v)
        return _type_list(out)

    return walk(schema)

"""Reading scoring inputs: size-capped JSON/TOML files, validation errors with file and JSON path."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.tools.errors import ActionError

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""Largest file read whole (a suite, an ATIF trajectory, a spec, a baseline report)."""


class EvalInputError(ActionError):
    """An input to scoring cannot be read or is invalid. The message names the file and the JSON
    path of the first problems; the CLI prints it and exits 2."""


def json_path(loc: tuple | list) -> str:
    """``('tasks', 0, 'expectedActions')`` -> ``$.tasks[0].expectedActions``."""
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validation_message(source: str, err: ValidationError, limit: int = 5) -> str:
    """One line per error (first ``limit``): ``source: $.path: message``."""
    lines = []
    for e in err.errors()[:limit]:
        loc = [p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        lines.append(f"{source}: {json_path(loc)}: {e['msg']}")
    more = err.error_count() - limit
    return "; ".join(lines) + (f" (+{more} more)" if more > 0 else "")


def read_bytes(path: Path, label: str | None = None, *, too_big: str = "split the input") -> bytes:
    """The file's bytes; raises :class:`EvalInputError` when missing, unreadable or too large
    (``too_big`` is then its next step). A file that cannot be opened is named by ``path`` as given
    (folder and all, so the user sees which file was looked for); ``label`` names it otherwise."""
    label = label or path.name
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise EvalInputError(f"{label}: {size} bytes is over the {MAX_INPUT_BYTES}-byte limit", too_big)
        return path.read_bytes()
    except FileNotFoundError:
        raise EvalInputError(f"{path}: no such file", "check the path") from None
    except IsADirectoryError:
        raise EvalInputError(f"{path}: is a folder, expected a file", "pass a file") from None
    except OSError as e:
        raise EvalInputError(f"{path}: cannot read: {e.strerror or e}", "check the path and its permissions") from None


def _decode(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise EvalInputError(f"{label}: not UTF-8 text (byte {e.start})", "save the file as UTF-8 JSON") from None


def parse_json(data: bytes, label: str) -> Any:
    """Parse JSON text; raises :class:`EvalInputError` with line and column on bad JSON."""
    return _loads(_decode(data, label), label)


def _loads(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise EvalInputError(
            f"{label}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", "fix the JSON"
        ) from None
    except RecursionError:
        raise EvalInputError(f"{label}: JSON nested too deeply", "flatten the document") from None


JSONL_SUFFIXES = (".jsonl", ".ndjson")
"""File names read as JSON Lines (one document per line) whatever their content."""

JsonLine = tuple[str, Any]
"""``(label, document)`` of one line, labelled ``file:LINE``; the document is an :class:`EvalInputError`
when the line is not valid JSON."""


def parse_json_lines(text: str, label: str) -> list[JsonLine]:
    """One document per non-blank line (JSON Lines), each labelled ``label:LINE`` (1-based). A line
    that is not valid JSON gives an :class:`EvalInputError` in place of its document."""
    out: list[JsonLine] = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{label}:{n}"
        try:
            out.append((where, json.loads(line)))
        except json.JSONDecodeError as e:
            out.append((where, EvalInputError(f"{where}: not valid JSON: {e.msg} at column {e.colno}", "fix the line")))
        except RecursionError:
            out.append((where, EvalInputError(f"{where}: JSON nested too deeply", "flatten the document")))
    return out


def parse_json_or_lines(data: bytes, label: str, *, lines: bool = False) -> tuple[bool, Any]:
    """``(False, document)`` for a JSON file, ``(True, [(label:LINE, document), ...])`` for JSON Lines.

    JSON Lines when ``lines`` (e.g. a ``.jsonl`` name) or when the text holds more than one JSON
    document (the first line parses and more follows). Raises :class:`EvalInputError` on text that
    is neither (the message names line and column)."""
    text = _decode(data, label)
    if not lines:
        try:
            return False, json.loads(text)
        except json.JSONDecodeError as e:
            if e.msg != "Extra data":
                raise EvalInputError(
                    f"{label}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", "fix the JSON"
                ) from None
        except RecursionError:
            raise EvalInputError(f"{label}: JSON nested too deeply", "flatten the document") from None
    return True, parse_json_lines(text, label)


def parse_toml(data: bytes, label: str) -> dict:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise EvalInputError(f"{label}: not valid TOML: {e}", "fix the syntax") from None


def validate(model: type[BaseModel], doc: Any, label: str, hint: str) -> Any:
    """``model.model_validate(doc)``; raises :class:`EvalInputError` naming file and JSON paths."""
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise EvalInputError(validation_message(label, e), hint) from None
    except RecursionError:
        raise EvalInputError(f"{label}: document nested too deeply", hint) from None


def load_reward_spec(path: Path) -> RewardSpec:
    """A reward spec from JSON, or TOML (a whole spec, or a task.toml-style ``[reward]`` table)."""
    path = Path(path)
    data = read_bytes(path)
    if path.suffix == ".toml":
        doc: Any = parse_toml(data, path.name)
        if isinstance(doc, dict) and isinstance(doc.get("reward"), dict) and "criteria" not in doc:
            doc = doc["reward"]
    else:
        doc = parse_json(data, path.name)
    return validate(RewardSpec, doc, path.name, "fix the reward spec (see schemas/reward_spec.schema.json)")

"""What every repository of the store shares: its error type, ids and the stored time format.

Times are stored as ISO-8601 strings in UTC with microseconds and a ``Z`` suffix
(``2026-11-29T12:00:00.000000Z``), so string order is time order on both SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import orjson

from agent_rl_sandbox.tools.errors import ActionError


class StoreError(ActionError):
    """A store operation that cannot proceed (unknown id, finished trajectory, malformed step)."""


def utcnow() -> str:
    """Current UTC time as ISO-8601 with microseconds and a ``Z`` suffix."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id(prefix: str) -> str:
    """A random id like ``traj_3f2a...`` (12 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def normalise_time(value: str) -> str:
    """An ISO-8601 time (``2026-11-29``, ``2026-11-29T12:00:00+02:00``...) in the store's UTC form, so it
    compares correctly with stored ``created_at`` strings. Raises ``ValueError`` for anything else."""
    v = value.strip()
    if v.endswith("Z"):
        v = v[:-1] + "+00:00"
    dt = datetime.fromisoformat(v)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec="microseconds")[:26] + "Z"  # zero-padded year, unlike strftime


NOT_UNICODE = "text is not valid Unicode (a lone surrogate, such as \\ud800, which UTF-8 cannot encode)"
"""The reason given for a string holding a lone surrogate (:func:`lone_surrogate_at`): refused, not
stored escaped, so that what is stored is the text given and reads back through every reader."""


def lone_surrogate_at(value: Any, path: str = "") -> str | None:
    """The dotted path (``tool_calls[0].arguments.cmd``; ``$`` for ``value`` itself) of the first string in
    ``value`` (a JSON-like value: dicts, lists, strings; dict keys included) holding a lone surrogate
    (``"\\ud800"``, a legal Python ``str`` that UTF-8 cannot encode), or ``None`` when there is none.
    orjson refuses to write exactly such strings (and integers beyond 64 bits, non-string keys, objects
    it does not know), so a value it writes has none (about 1 us for a step); only a value it refuses is
    walked. ``path`` prefixes the paths found."""
    try:
        orjson.dumps(value)
        return None
    except TypeError:  # orjson.JSONEncodeError
        return _surrogate_walk(value, path)


def _surrogate_walk(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "$"
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    for k, v in items:
        sub = f"{path}[{k}]" if isinstance(k, int) else (f"{path}.{k}" if path else str(k))
        if isinstance(k, str) and _surrogate_walk(k, "") is not None:
            return sub.encode("utf-8", "backslashreplace").decode()
        found = _surrogate_walk(v, sub)
        if found is not None:
            return found
    return None

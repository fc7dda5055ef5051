"""What every repository of the store shares: its error type, ids and the stored time format.

Times are stored as ISO-8601 strings in UTC with microseconds and a ``Z`` suffix
(``2026-11-29T12:00:00.000000Z``), so string order is time order on both SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

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

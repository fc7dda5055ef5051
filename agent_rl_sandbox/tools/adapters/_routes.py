"""Which served model name answers for each behaviour: the switch the kill switch flips.

A :class:`RouteTable` is a small JSON file (``<home>/adapters/routes.json``: ``{behaviour: model
name}``) that every client of the serving backend reads to choose a request's ``model``. A behaviour
without an entry goes to the base model. Each change rewrites the file atomically (temporary file,
``fsync``, ``os.replace``) under an exclusive ``flock`` on a lock file beside it, so readers see the
old table or the new one, never half of one, and two writers never lose each other's change.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path


class RouteTable:
    """Routes of one deployment (a file path; nothing is cached between calls)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, str]:
        """The whole table (``{}`` when the file is absent or unreadable as a JSON object)."""
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}

    def model_for(self, behaviour: str, base_model: str) -> str:
        """The model name to request for ``behaviour``: its route, else ``base_model``."""
        return self.read().get(behaviour, base_model)

    def set(self, behaviour: str, model: str | None) -> None:
        """Route ``behaviour`` to ``model`` (``None`` removes the route: base model). Raises
        ``OSError`` when the folder is not writable."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            table = self.read()
            if model is None:
                table.pop(behaviour, None)
            else:
                table[behaviour] = model
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(table, f, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            os.close(fd)

"""``results.csv``: one row per finished job at the root of the jobs folder.

The header is written once, by whichever writer finds the file empty. Each row is written with one
``O_APPEND`` write while holding an exclusive ``flock`` on the file, so concurrent workers on the
same machine (or on one shared POSIX filesystem with working locks) never interleave or split a
row, and no header is written twice. Fields are CSV-quoted by :mod:`csv`; a newline inside a field
stays inside its quotes.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RESULT_COLUMNS: tuple[str, ...] = (
    "job_id",
    "created",
    "started",
    "finished",
    "route",
    "trainer",
    "base_model",
    "dataset_hash",
    "baseline",
    "final_score",
    "improvement",
    "gate_verdict",
    "duration_s",
    "status",
    "workspace",
)
"""The columns, in order."""


def _line(values: list[Any]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return buf.getvalue().encode("utf-8")


def append_result(path: Path, row: Mapping[str, Any]) -> None:
    """Append ``row`` (keys from :data:`RESULT_COLUMNS`; missing ones are empty) to ``path``,
    creating it with the header. Raises ``ValueError`` for an unknown key, ``OSError`` when the file
    cannot be written."""
    unknown = set(row) - set(RESULT_COLUMNS)
    if unknown:
        raise ValueError(
            f"unknown results.csv columns {', '.join(sorted(unknown))}. Next step: use {', '.join(RESULT_COLUMNS)}."
        )
    data = _line([row.get(c) for c in RESULT_COLUMNS])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size == 0:
            data = _line(list(RESULT_COLUMNS)) + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)  # closing releases the lock


def read_results(path: Path) -> list[dict[str, str]]:
    """The rows of ``path`` as dicts (``[]`` when it does not exist)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []

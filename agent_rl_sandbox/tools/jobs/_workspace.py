"""Reading a job's workspace for the human faces (``jobs show``, the web page): bounded log tails,
the scores file, the metrics series and the plots the trainer wrote.

A workspace (``<home>/jobs/<job id>/``, made by the worker) holds ``run.log``, ``train.log``,
``metrics.jsonl``, ``scores.json``, ``metrics.png`` and ``plots/*.png``. Everything here reads only those names,
never follows a symbolic link (a stage could leave one pointing anywhere) and bounds what it reads:

- :func:`log_tail`: the last ``max_bytes`` bytes of ``run.log`` or ``train.log`` (UTF-8, replaced).
- :func:`read_scores`: ``scores.json`` as a dict (``None`` when absent or not a JSON object).
- :func:`metrics_series`: ``(step, value)`` points per metric from ``metrics.jsonl`` rows such as
  ``{"step": 10, "loss": 0.52, "reward": 0.3}`` (TRL's log entries), thinned to ``max_points``.
- :func:`plot_names`, :func:`plot_bytes`: the PNG plots the trainer wrote (``metrics.png``,
  ``plots/*.png``), and one's bytes.

None of these raises for a missing or malformed file: a workspace is evidence to show, and a page
that cannot show one file still shows the rest.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from agent_rl_sandbox.tools.jobs._repository import JobRecord

LOG_NAMES = ("run.log", "train.log")
"""The logs :func:`log_tail` reads."""
SERIES_KEYS = ("loss", "train_loss", "eval_loss", "reward", "rewards/mean", "eval_reward")
"""The ``metrics.jsonl`` keys :func:`metrics_series` collects (others are ignored)."""
MAX_METRIC_BYTES = 16 * 1024 * 1024
"""``metrics.jsonl`` is read up to this many bytes (a longer file: the first part is plotted)."""

ROOT_PLOTS = ("metrics.png",)
"""Plots read from the workspace root (the trainers' ``plot_metrics`` writes ``metrics.png``)."""
_PLOT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}\.png$")


def _open(job: JobRecord, rel: str) -> int | None:
    """A read-only descriptor of ``<workspace>/rel`` (no symlink followed at any component, regular
    file checked on the descriptor), or ``None``."""
    if not job.workspace:
        return None
    try:
        fd = os.open(job.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        parts = rel.split("/")
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(out).st_mode):
        os.close(out)
        return None
    return out


def _read(job: JobRecord, rel: str, max_bytes: int, *, tail: bool = False) -> tuple[bytes, int] | None:
    """``(bytes, file size)``: the first (or last, with ``tail``) ``max_bytes`` of the file."""
    fd = _open(job, rel)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if tail and size > max_bytes:
            os.lseek(fd, size - max_bytes, os.SEEK_SET)
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(max_bytes), size
    finally:
        os.close(fd)


def log_tail(job: JobRecord, name: str, max_bytes: int = 16_000) -> dict[str, Any] | None:
    """The end of ``run.log`` or ``train.log``: ``{"text", "size", "truncated"}`` (``size`` in bytes;
    ``truncated`` when the file is longer than ``max_bytes``), or ``None`` when the file is absent.
    Raises ``ValueError`` for a name other than :data:`LOG_NAMES`."""
    if name not in LOG_NAMES:
        raise ValueError(f"{name!r} is not a job log; use one of {', '.join(LOG_NAMES)}")
    got = _read(job, name, max_bytes, tail=True)
    if got is None:
        return None
    data, size = got
    return {"text": data.decode("utf-8", errors="replace"), "size": size, "truncated": size > max_bytes}


def read_scores(job: JobRecord, max_bytes: int = 1_000_000) -> dict[str, Any] | None:
    """``scores.json`` (the baseline and final scores the stages wrote) as a dict, or ``None``."""
    got = _read(job, "scores.json", max_bytes)
    if got is None:
        return None
    try:
        doc = json.loads(got[0])
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def metrics_series(job: JobRecord, max_points: int = 400) -> dict[str, list[tuple[float, float]]]:
    """``{metric: [(step, value), ...]}`` for the :data:`SERIES_KEYS` found in ``metrics.jsonl``, in
    file order; a row's step is its ``step`` (or ``global_step``) field, else its line number.
    Non-finite values and malformed lines are skipped; each series is thinned evenly to at most
    ``max_points`` points (the last point kept). Empty when the file is absent."""
    got = _read(job, "metrics.jsonl", MAX_METRIC_BYTES)
    if got is None:
        return {}
    out: dict[str, list[tuple[float, float]]] = {}
    for n, line in enumerate(got[0].splitlines(), start=1):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        step = row.get("step", row.get("global_step", n))
        if not isinstance(step, int | float) or isinstance(step, bool):
            step = n
        for key in SERIES_KEYS:
            v = row.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                out.setdefault(key, []).append((float(step), float(v)))
    for key, pts in out.items():
        if len(pts) > max_points:
            stride = math.ceil(len(pts) / max_points)
            out[key] = pts[::stride][: max_points - 1] + [pts[-1]]
    return out


def plot_names(job: JobRecord) -> list[str]:
    """Names of the PNG plots of the workspace: ``metrics.png`` (what the trainers write, loss and
    reward against step) when present, then ``plots/*.png`` (sorted; a name already taken by the
    workspace root is skipped), at most 20. :func:`plot_bytes` reads a name from this list."""
    if not job.workspace:
        return []
    ws = Path(job.workspace)
    names = [n for n in ROOT_PLOTS if (ws / n).is_file() and not (ws / n).is_symlink()]
    folder = ws / "plots"
    if not folder.is_symlink() and folder.is_dir():
        names += sorted(
            p.name for p in folder.iterdir() if _PLOT_NAME.match(p.name) and not p.is_symlink() and p.name not in names
        )
    return names[:20]


def plot_bytes(job: JobRecord, name: str, max_bytes: int = 8 * 1024 * 1024) -> bytes | None:
    """The bytes of plot ``name`` (``metrics.png`` at the workspace root, else ``plots/NAME``), or
    ``None`` when ``name`` is not a plain ``*.png`` file name, the file is absent, a link, or larger
    than ``max_bytes``."""
    if not _PLOT_NAME.match(name):
        return None
    got = _read(job, name if name in ROOT_PLOTS else f"plots/{name}", max_bytes + 1)
    if got is None or got[1] > max_bytes:
        return None
    return got[0]

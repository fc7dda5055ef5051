"""The dataset kind an export manifest names for a file next to it.

``export`` writes ``<export_id>/<data file>`` beside ``<export_id>/manifest.json``, whose ``files[]`` each
carry ``path`` (the data file's name) and ``kind`` (``trl.language_modeling``, ``minimind.dpo``, ...). A file
validated without ``kind=`` takes that kind instead of being guessed per row: an export's rows often match
two kinds (a TRL ``messages`` row is also an OpenAI chat row; a MiniMind DPO row is also a TRL preference
row), and guessing gives ``kind_ambiguous`` for a file whose kind is written down next to it.

The manifest must describe this very file: its ``sha256`` for the file has to match the file's content (a
file edited after export, or a manifest planted beside another file, chooses nothing and the kind is
detected as usual). The hash is computed only when the manifest names the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

MANIFEST_NAME = "manifest.json"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""A manifest larger than this is not read (an export's is a few KB)."""


def manifest_kind(
    path: Path,
    known: tuple[str, ...] | frozenset[str] | dict,
    opener: Callable[[Path], BinaryIO] | None = None,
) -> str | None:
    """The ``kind`` the adjacent ``manifest.json`` gives for ``path`` (matched by file name and ``sha256``), when
    it is one of ``known``; ``None`` when there is no readable manifest, it does not list the file, its hash
    differs, or it names no known kind. ``opener`` opens both files (the MCP tool passes its no-follow opener,
    so a manifest that is a symbolic link is not read). Never raises."""
    manifest = path.parent / MANIFEST_NAME
    if path.name == MANIFEST_NAME:
        return None
    try:
        with (opener or _open)(manifest) as fh:
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
        if len(raw) > MAX_MANIFEST_BYTES:
            return None
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    files = doc.get("files") if isinstance(doc, dict) else None
    for f in files if isinstance(files, list) else []:
        if isinstance(f, dict) and isinstance(f.get("path"), str) and Path(f["path"]).name == path.name:
            kind = f.get("kind")
            if not (isinstance(kind, str) and kind in known and isinstance(f.get("sha256"), str)):
                return None
            return kind if _sha256(path, opener or _open) == f["sha256"] else None
    return None


def _open(path: Path) -> BinaryIO:
    return path.open("rb")


def _sha256(path: Path, opener: Callable[[Path], BinaryIO]) -> str | None:
    h = hashlib.sha256()
    try:
        with opener(path) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()

"""The canonical form of a job spec and its hash: what a human's approval is bound to.

Canonical form: the spec as JSON (``model_dump(mode="json")``, defaults filled in), a dataset
file's path made absolute and normalised (``os.path.normpath`` against the requester's working
folder; symlinks are not resolved here, the worker opens the file without following them) and its
``sha256`` filled in from the content. The hash is SHA-256 over ``json.dumps(canonical,
sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` encoded as UTF-8, so key order,
whitespace and an omitted default never change it, and any change of meaning does.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.jobs import JobSpec


def canonical_spec(spec: JobSpec, *, cwd: Path, dataset_sha256: str | None = None) -> dict[str, Any]:
    """``spec`` in canonical form (see the module docstring). ``dataset_sha256`` is the content hash
    of a file dataset, computed by the caller from the file it validated."""
    doc = spec.model_dump(mode="json")
    ds = doc["dataset"]
    if ds["kind"] == "file":
        path = ds["path"]
        ds["path"] = os.path.normpath(path if os.path.isabs(path) else os.path.join(os.fspath(cwd), path))
        if dataset_sha256 is not None:
            ds["sha256"] = dataset_sha256
    return doc


def spec_hash(canonical: dict[str, Any]) -> str:
    """SHA-256 hex digest of a canonical spec."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

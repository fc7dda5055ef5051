"""The canonical form of a job spec and its hash: what a human's approval is bound to.

Canonical form: the spec as JSON (``model_dump(mode="json")``, defaults filled in), a dataset
file's path made absolute and normalised (``os.path.normpath`` against the requester's working
folder; symlinks are not resolved here, the worker opens the file without following them) and its
``sha256`` filled in from the content, a local base-model folder's content digest added
(``base_model_sha256``) and a store selection cut off at the request time (``created_before``). The hash is SHA-256 over ``json.dumps(canonical,
sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` encoded as UTF-8, so key order,
whitespace and an omitted default never change it, and any change of meaning does.

:func:`spec_changes` lists what differs between two canonical specs, field by field (what a human
compares when an agent re-requests after a rejection).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.jobs import JobSpec


def canonical_spec(
    spec: JobSpec,
    *,
    cwd: Path,
    dataset_sha256: str | None = None,
    base_model_sha256: str | None = None,
    store_created_before: str | None = None,
) -> dict[str, Any]:
    """``spec`` in canonical form (see the module docstring). ``dataset_sha256`` is the content hash
    of a file dataset, computed by the caller from the file it validated; ``base_model_sha256`` the
    digest of a local base-model folder (:func:`~._model_digest.model_digest`), stored as a top-level
    ``base_model_sha256``; ``store_created_before`` (ISO-8601) the request time, stored in a store
    selection as ``created_before``, so the rows the worker exports are those of trajectories that
    existed when the human looked (a later trajectory never joins an approved job's data)."""
    doc = spec.model_dump(mode="json")
    ds = doc["dataset"]
    if ds["kind"] == "file":
        path = ds["path"]
        ds["path"] = os.path.normpath(path if os.path.isabs(path) else os.path.join(os.fspath(cwd), path))
        if dataset_sha256 is not None:
            ds["sha256"] = dataset_sha256
    elif store_created_before is not None:
        ds["created_before"] = store_created_before
    if base_model_sha256 is not None:
        doc["base_model_sha256"] = base_model_sha256
    return doc


def spec_hash(canonical: dict[str, Any]) -> str:
    """SHA-256 hex digest of a canonical spec."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


ABSENT = "(absent)"
"""What :func:`spec_changes` reports for a field one side does not have."""


def spec_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields that differ between two canonical specs, as ``{"path", "before", "after"}`` rows in
    sorted path order (``caps.max_steps``; nested objects are walked, lists compared whole; a field
    only one side has shows :data:`ABSENT` on the other). Empty when the specs are equal."""
    out: list[dict[str, Any]] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key, ABSENT), b.get(key, ABSENT), f"{path}.{key}" if path else str(key))
        elif a != b:
            out.append({"path": path, "before": a, "after": b})

    walk(before, after, "")
    return out

"""The ``validate`` stage: re-validate the job's materialised dataset against its hash.

Run as ``python -m agent_rl_sandbox.worker.validate_stage`` in the job's workspace. It reads
``$AGENT_RL_SANDBOX_JOB_JSON`` (default ``./job.json``) and takes the dataset from its ``dataset``
object (``{"path", "sha256"}``, written by the worker after materialising a store selection) or,
failing that, from the spec's file dataset (``spec.dataset.path`` / ``spec.dataset.sha256``). The
file is opened without following a final symlink, hashed (SHA-256) and validated with
:func:`agent_rl_sandbox.tools.datasets.validate_file`; the report goes to
``dataset_report.json`` in the workspace.

Exit status: 0 the hash matches and the data is valid; 1 the hash differs or validation found
errors; 2 no dataset named or the file is unreadable. One line on stderr says which.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path


def _sha256_nofollow(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main() -> int:
    """Run the stage; returns the exit status described in the module docstring."""
    job_json = Path(os.environ.get("AGENT_RL_SANDBOX_JOB_JSON", "job.json"))
    try:
        doc = json.loads(job_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"validate: cannot read {job_json}: {exc}", file=sys.stderr)
        return 2
    ds = doc.get("dataset") or (doc.get("spec") or {}).get("dataset") or {}
    path, want = ds.get("path"), ds.get("sha256")
    if not isinstance(path, str) or not isinstance(want, str):
        print("validate: job.json names no dataset path and sha256", file=sys.stderr)
        return 2
    try:
        got = _sha256_nofollow(path)
    except OSError as exc:
        print(f"validate: cannot read dataset {path}: {exc}", file=sys.stderr)
        return 2
    if got != want:
        print(f"validate: dataset {path} changed: sha256 {got} != approved {want}", file=sys.stderr)
        return 1
    from agent_rl_sandbox.tools.datasets import validate_file

    report = validate_file(path)
    Path("dataset_report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    print(f"validate: sha256 {got} matches; {report.text(limit=5)}")
    return 0 if report.exit_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

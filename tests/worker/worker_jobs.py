"""Helpers that put approved, queued jobs into a store (imported by the worker tests)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.tools.jobs import JobRepository, canonical_spec, later, spec_hash
from agent_rl_sandbox.tools.store import utcnow


def dataset_file(folder: Path) -> tuple[Path, str]:
    """A valid one-row SFT dataset and its sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sft.jsonl"
    row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "claimed first"}]}
    path.write_text(json.dumps(row) + "\n")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def queued_job(repo: JobRepository, data: Path, sha: str, **spec_changes) -> str:
    """A job a human approved (bound to its hash) and the system queued; returns its id."""
    spec = {
        "route": "sft", "trainer": "sft", "base_model": "/models/tiny",
        "dataset": {"kind": "file", "path": str(data)}, "gate": {"behaviour": "claim-before-edit"},
        "reason": "teach claiming", **spec_changes,
    }  # fmt: skip
    canon = canonical_spec(JobSpec.model_validate(spec), cwd=Path("/"), dataset_sha256=sha)
    job = repo.add(
        requester="agent-a", spec=canon, spec_hash=spec_hash(canon), expires_at=later(3600),
        trainer="sft", behaviour="claim-before-edit",
    )  # fmt: skip
    repo.transition(job.job_id, "approved", "human", "ok", expect_from="awaiting_approval", who="alice",
                    approved_hash=job.spec_hash, decided_by="alice", decided_at=utcnow())  # fmt: skip
    repo.transition(job.job_id, "queued", "system", "approved: queued", expect_from="approved")
    return job.job_id

"""A job's workspace: one folder per job under ``<home>/jobs/``, kept after the job ends.

Layout (``JobWorkspace`` names each path)::

    <home>/jobs/
      results.csv            one row per finished job (see _results)
      <job id>/
        job.json             spec, spec hash and approval, as the worker claimed the job
        run.log              the worker's stage log: one line per stage start and end, and each
                             stage's stdout and stderr
        train.log            the trainer's own log (written by the train stage)
        metrics.jsonl        one line per logged step: step, loss, reward, learning_rate, tokens, time
        scores.json          baseline, every eval, best (written by the eval stages)
        adapter/             the trained adapter's files
        <stage>_error.json   why a stage refused or crashed: {"reason", "last_log_lines", ...}
                             (written by the stage; its reason goes into the job's failure reason)

Stages get the workspace as their working folder and find these paths in the environment
(``AGENT_RL_SANDBOX_WORKSPACE``, ``AGENT_RL_SANDBOX_JOB_JSON``, ...; see :meth:`JobWorkspace.env`).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class JobWorkspace:
    """Paths of one job's workspace. Build with :meth:`create`."""

    root: Path

    @property
    def job_json(self) -> Path:
        return self.root / "job.json"

    @property
    def run_log(self) -> Path:
        return self.root / "run.log"

    @property
    def train_log(self) -> Path:
        return self.root / "train.log"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def scores(self) -> Path:
        return self.root / "scores.json"

    @property
    def adapter_dir(self) -> Path:
        return self.root / "adapter"

    @classmethod
    def create(cls, jobs_dir: Path, job_id: str, job_doc: dict[str, Any]) -> JobWorkspace:
        """Make (or reopen) ``jobs_dir/<job_id>``, write ``job.json`` from ``job_doc`` (atomically),
        and create the empty ``adapter/``. Raises ``ValueError`` for a job id that is not a plain
        name (letters, digits, ``_.-``, at most 128), so no id can point outside ``jobs_dir``."""
        if not _JOB_ID.match(job_id):
            raise ValueError(f"job id {job_id!r} is not a plain name. Next step: use the id the job store assigned.")
        ws = cls(jobs_dir / job_id)
        ws.adapter_dir.mkdir(parents=True, exist_ok=True)
        tmp = ws.job_json.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(job_doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, ws.job_json)
        return ws

    def log(self, message: str) -> None:
        """Append one timestamped line (UTC, ISO 8601) to ``run.log``."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(self.run_log, "a", encoding="utf-8") as f:
            f.write(f"{stamp} {message}\n")

    def env(self) -> dict[str, str]:
        """The workspace paths a stage reads from its environment."""
        return {
            "AGENT_RL_SANDBOX_WORKSPACE": str(self.root),
            "AGENT_RL_SANDBOX_JOB_JSON": str(self.job_json),
            "AGENT_RL_SANDBOX_TRAIN_LOG": str(self.train_log),
            "AGENT_RL_SANDBOX_METRICS": str(self.metrics),
            "AGENT_RL_SANDBOX_SCORES": str(self.scores),
            "AGENT_RL_SANDBOX_ADAPTER_DIR": str(self.adapter_dir),
        }

    def stage_error(self, stage: str, limit: int = 500) -> str | None:
        """The ``reason`` of ``<stage>_error.json`` on one line, cut at ``limit`` characters;
        ``None`` when the stage wrote none (or garbage)."""
        try:
            doc = json.loads((self.root / f"{stage}_error.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        reason = doc.get("reason") if isinstance(doc, dict) else None
        if not isinstance(reason, str) or not reason.strip():
            return None
        line = " ".join(reason.split())
        return line if len(line) <= limit else line[: limit - 3] + "..."

    def read_scores(self) -> dict[str, Any]:
        """``scores.json`` as a dict; ``{}`` when absent or unreadable (a stage that wrote garbage
        gives no score, it does not crash the worker)."""
        try:
            doc = json.loads(self.scores.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

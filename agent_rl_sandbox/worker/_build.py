"""Wiring a :class:`~._loop.Worker` from :class:`~agent_rl_sandbox.settings.Settings`: the store's job
repository, the operator's stage configuration, store selections exported through the trajectory
service (an omitted ``min_reward`` means the export's default, 1.0: passing trajectories only), and
gate-passing jobs registered as adapter candidates (the workspace's ``adapter/`` with
``scores.json`` and, when the gate stage wrote one, ``gate_report.json`` as the gate report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.jobs import JobRecord, JobRepository
from agent_rl_sandbox.worker._config import load_worker_config
from agent_rl_sandbox.worker._loop import Worker
from agent_rl_sandbox.worker._workspace import JobWorkspace


def build_worker(settings: Settings, *, lease_s: float = 60.0, worker_id: str | None = None) -> tuple[Worker, Services]:
    """A worker on ``settings``' store and the services it uses (the caller closes them). Raises
    :class:`~._config.WorkerConfigError` for a malformed stage configuration."""
    config = load_worker_config(settings.home, settings.worker_config)
    services = Services.build(settings)

    def materialise(selection: dict[str, Any], out: Path) -> Path:
        from agent_rl_sandbox.tools.trajectories._export import store_selection_options

        return Path(services.trajectories.export_to(store_selection_options(selection), out).data_path)

    def on_gate_passed(job: JobRecord, ws: JobWorkspace) -> None:
        report: dict[str, Any] = {"scores": ws.read_scores()}
        try:
            report["gate"] = json.loads((ws.root / "gate_report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        services.adapters.register_candidate(
            job_id=job.job_id, behaviour=job.behaviour, base_model=str(job.spec.get("base_model")),
            spec_hash=job.approved_hash or job.spec_hash, path=ws.adapter_dir, gate_report=report,
        )  # fmt: skip

    worker = Worker(
        JobRepository(services.store.engine), config, settings.jobs_dir, worker_id=worker_id, lease_s=lease_s,
        materialise=materialise, on_gate_passed=on_gate_passed,
    )  # fmt: skip
    return worker, services

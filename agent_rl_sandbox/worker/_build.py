"""Wiring a :class:`~._loop.Worker` from :class:`~agent_rl_sandbox.settings.Settings`: the store's job
repository, the operator's stage configuration, store selections exported through the trajectory
service, and gate-passing jobs registered as adapter candidates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.jobs import JobRepository
from agent_rl_sandbox.worker._config import load_worker_config
from agent_rl_sandbox.worker._loop import Worker


def build_worker(settings: Settings, *, lease_s: float = 60.0, worker_id: str | None = None) -> tuple[Worker, Services]:
    """A worker on ``settings``' store and the services it uses (the caller closes them). Raises
    :class:`~._config.WorkerConfigError` for a malformed stage configuration."""
    config = load_worker_config(settings.home, settings.worker_config)
    services = Services.build(settings)

    def materialise(selection: dict[str, Any], out: Path) -> Path:
        from agent_rl_sandbox.tools.trajectories._export import ExportOptions

        opts = ExportOptions(
            format=selection["export"],
            behaviour=selection.get("behaviour"),
            task_id=selection.get("task_id"),
            agent_name=selection.get("agent_name"),
            min_reward=selection.get("min_reward", 1.0),
        )
        return Path(services.trajectories.export_to(opts, out).data_path)

    on_gate_passed = None
    adapters = getattr(services, "adapters", None)
    if adapters is not None:
        on_gate_passed = adapters.register_from_job
    worker = Worker(
        JobRepository(services.store.engine), config, settings.jobs_dir, worker_id=worker_id, lease_s=lease_s,
        materialise=materialise, on_gate_passed=on_gate_passed,
    )  # fmt: skip
    return worker, services

"""The services one process holds, built once from :class:`Settings` and shared by the MCP adapter
and the CLI. Each MCP tool names its implementation as ``"<service>.<method>"`` on this object."""

from __future__ import annotations

from dataclasses import dataclass

from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.datasets import DatasetService
from agent_rl_sandbox.tools.evals import EvalService
from agent_rl_sandbox.tools.sandbox import SandboxService
from agent_rl_sandbox.tools.trajectories import TrajectoryStore
from agent_rl_sandbox.tools.trajectories._service import TrajectoryService


@dataclass
class Services:
    settings: Settings
    store: TrajectoryStore
    sandbox: SandboxService
    evals: EvalService
    """Scoring from the store and eval gates."""
    trajectories: TrajectoryService
    """Self-logged trajectories, listing, imports and training-data exports."""
    datasets: DatasetService
    """Post-training data validation."""

    @classmethod
    def build(cls, settings: Settings | None = None) -> Services:
        """Open the store (creating tables) and load tasks. Raises on an unreachable database."""
        settings = settings or Settings.from_env()
        settings.home.mkdir(parents=True, exist_ok=True)
        store = TrajectoryStore(settings.db_url)
        sandbox = SandboxService(settings, store)

        def task_info(task_id: str) -> tuple[str | None, str | None] | None:
            task = sandbox.tasks.get(task_id)
            return (task.config.behaviour, task.config.split) if task is not None else None

        return cls(
            settings=settings, store=store, sandbox=sandbox, evals=EvalService(settings, store, sandbox),
            trajectories=TrajectoryService(settings, store, task_info),
            datasets=DatasetService(settings),
        )

    def resolve(self, path: str):
        """The bound method named ``"<service>.<method>"``; raises ``AttributeError`` if missing."""
        service, method = path.split(".", 1)
        return getattr(getattr(self, service), method)

    def close(self) -> None:
        """Kill live sandbox commands, then release the database connections."""
        self.sandbox.close()
        self.store.close()

"""The services one process holds, built once from :class:`Settings` and shared by the MCP adapter
and the CLI. Each MCP tool names its implementation as ``"<service>.<method>"`` on this object."""

from __future__ import annotations

from dataclasses import dataclass

from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import SandboxService
from agent_rl_sandbox.tools.trajectories import TrajectoryStore


@dataclass
class Services:
    settings: Settings
    store: TrajectoryStore
    sandbox: SandboxService

    @classmethod
    def build(cls, settings: Settings | None = None) -> Services:
        """Open the store (creating tables) and load tasks. Raises on an unreachable database."""
        settings = settings or Settings.from_env()
        settings.home.mkdir(parents=True, exist_ok=True)
        store = TrajectoryStore(settings.db_url)
        return cls(settings=settings, store=store, sandbox=SandboxService(settings, store))

    def resolve(self, path: str):
        """The bound method named ``"<service>.<method>"``; raises ``AttributeError`` if missing."""
        service, method = path.split(".", 1)
        return getattr(getattr(self, service), method)

    def close(self) -> None:
        self.store.close()

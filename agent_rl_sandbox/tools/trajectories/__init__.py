"""Trajectory logging service, importers and training-data exports (the store is ``tools.store``).

Public surface::

    StoreError, AppendResult, new_id, utcnow   re-exported from ``tools.store``
    Redactor                        detect-secrets based redaction (lives in ``tools.store``)
    TrajectoryService               the trajectory_* MCP tools, import and export
    import_file, IMPORT_FORMATS     ATIF, Claude Code transcripts, Codex rollouts, OpenAI chat logs
    export_trajectories, ExportOptions, FORMATS   SFT/DPO/KTO/GRPO, MiniMind, ATIF, Port Daddy suites
    conversation                    a trajectory as chat messages (the rules every training export uses)

Everything but the re-exports loads on first use.
"""

from agent_rl_sandbox.tools.store import AppendResult, StoreError, new_id, utcnow

_LAZY = {
    "Redactor": "agent_rl_sandbox.tools.store._redact",
    "TrajectoryService": "agent_rl_sandbox.tools.trajectories._service",
    "import_file": "agent_rl_sandbox.tools.trajectories._import",
    "IMPORT_FORMATS": "agent_rl_sandbox.tools.trajectories._import",
    "export_trajectories": "agent_rl_sandbox.tools.trajectories._export",
    "ExportOptions": "agent_rl_sandbox.tools.trajectories._export",
    "FORMATS": "agent_rl_sandbox.tools.trajectories._export",
    "conversation": "agent_rl_sandbox.tools.trajectories._convert",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AppendResult",
    "ExportOptions",
    "FORMATS",
    "IMPORT_FORMATS",
    "Redactor",
    "StoreError",
    "TrajectoryService",
    "conversation",
    "export_trajectories",
    "import_file",
    "new_id",
    "utcnow",
]

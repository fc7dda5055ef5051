"""Trajectory store: trajectories, append-only steps and sandbox rows (SQLite or PostgreSQL)."""

from agent_rl_sandbox.tools.trajectories._store import StoreError, TrajectoryStore, new_id, utcnow

__all__ = ["StoreError", "TrajectoryStore", "new_id", "utcnow"]

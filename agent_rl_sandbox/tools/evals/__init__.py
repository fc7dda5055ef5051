"""Scoring and eval gates: reward the world, not the transcript.

Public surface: :func:`score_trajectory` and :class:`FinalState`.
"""

from agent_rl_sandbox.tools.evals._scoring import FinalState, score_trajectory

__all__ = ["FinalState", "score_trajectory"]

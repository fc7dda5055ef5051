"""Scoring, eval reports and eval gates: reward the world, not the transcript.

Public surface:

- :func:`score_trajectory`, :class:`FinalState`: score one trajectory against a reward spec.
- :func:`score_path`, :func:`score_store`, :func:`score_atif`, :func:`score_suite_file`,
  :func:`score_suite`: the harness (store, ATIF files, Port Daddy suites) -> ``EvalReport``;
  :func:`report_json` writes it byte-identically; :func:`behaviour_stats` groups a report's scores
  by behaviour.
- :func:`load_gates`, :func:`evaluate_gate`, :data:`BUILTIN_GATES`: eval gates.
- :func:`parse_tool_calls`, :func:`failed_step`, :func:`model_output_steps`: malformed tool calls.
- :func:`detect_loops`: the same failing call repeated.
- :func:`score_and_gate`, :data:`StoreScorer`, :func:`is_store_input`: score one input and gate it (what ``score`` runs).
- :class:`EvalService`: the ``eval_gate`` MCP tool.
"""

from agent_rl_sandbox.tools.evals._atif import load_atif_file, trajectory_from_atif
from agent_rl_sandbox.tools.evals._gates import BUILTIN_GATES, evaluate_gate, load_baseline, load_gates
from agent_rl_sandbox.tools.evals._gating import StoreScorer, is_store_input, score_and_gate
from agent_rl_sandbox.tools.evals._harness import (
    is_info_note,
    load_unhooks,
    score_atif,
    score_path,
    score_store,
    score_suite_file,
)
from agent_rl_sandbox.tools.evals._inputs import EvalInputError, load_reward_spec
from agent_rl_sandbox.tools.evals._loops import detect_loops
from agent_rl_sandbox.tools.evals._port_daddy import score_suite
from agent_rl_sandbox.tools.evals._report import behaviour_stats, build_report, report_json, zero_variance_share
from agent_rl_sandbox.tools.evals._scoring import FinalState, score_trajectory
from agent_rl_sandbox.tools.evals._service import EvalService
from agent_rl_sandbox.tools.evals._toolcalls import (
    ParsedToolCall,
    ToolCallError,
    failed_step,
    model_output_steps,
    parse_tool_calls,
)

__all__ = [
    "BUILTIN_GATES",
    "EvalInputError",
    "EvalService",
    "FinalState",
    "ParsedToolCall",
    "StoreScorer",
    "ToolCallError",
    "behaviour_stats",
    "build_report",
    "detect_loops",
    "evaluate_gate",
    "failed_step",
    "is_store_input",
    "load_atif_file",
    "load_baseline",
    "load_gates",
    "load_reward_spec",
    "load_unhooks",
    "model_output_steps",
    "parse_tool_calls",
    "report_json",
    "is_info_note",
    "score_and_gate",
    "score_atif",
    "score_path",
    "score_store",
    "score_suite",
    "score_suite_file",
    "score_trajectory",
    "trajectory_from_atif",
    "zero_variance_share",
]

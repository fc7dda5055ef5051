"""Eval service: the domain logic behind the ``eval_gate`` MCP tool (read-only).

An agent may ask where its trajectories stand against a named gate. Nothing here writes a gate,
a baseline or a promotion: gates live in ``<home>/gates.toml``, which only a human edits (sandbox
commands cannot reach the home folder), and promotion is a CLI-only, human step.
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.schemas.reward import EvalGateInput, EvalGateOutput, EvalReport
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals._gates import evaluate_gate, load_gates
from agent_rl_sandbox.tools.evals._harness import score_store
from agent_rl_sandbox.tools.evals._inputs import EvalInputError

READ_ONLY_NOTE = "Gates are read-only here: only a human edits gates.toml or promotes an adapter past a gate."


class EvalService:
    """Scores stored trajectories and evaluates gates for the MCP layer and the CLI."""

    def __init__(self, settings: Settings, store: Any, sandbox: Any):
        self.settings = settings
        self.store = store
        self.sandbox = sandbox  # re-scores with the sandbox's final git tree

    def gates(self) -> dict:
        """Built-in gates plus ``<home>/gates.toml``. Raises :class:`ActionError` if the file is invalid."""
        try:
            return load_gates(self.settings.home)[0]
        except EvalInputError as e:
            raise ActionError(e.message, "ask a human to fix gates.toml") from None

    def score_store(self, **filters) -> EvalReport:
        return score_store(self, **filters)

    def gate(self, inp: EvalGateInput, caller: Caller = OPERATOR) -> EvalGateOutput:
        """Score the matching finished trajectories from the store and evaluate gate ``inp.gate``.
        An agent ``caller`` (MCP) aggregates only its own trajectories; another owner's id in
        ``inp.session_ids`` raises :class:`ActionError` (see :func:`._harness.score_store`). The
        operator (CLI) sees every trajectory."""
        gates = self.gates()
        if inp.gate not in gates:
            raise ActionError(f"unknown gate {inp.gate!r}", f"use one of {', '.join(sorted(gates))}")
        report = self.score_store(
            session_ids=inp.session_ids,
            task_id=inp.task_id,
            behaviour=inp.behaviour,
            agent_name=inp.agent_name,
            caller=caller,
        )
        verdict = evaluate_gate(report, inp.gate, gates[inp.gate], base_dir=self.settings.home)
        cap = self.settings.max_result_items
        return EvalGateOutput(
            verdict=verdict,
            stats=report.stats,
            by_task=report.by_task[:cap],
            problems=report.problems[:cap],
            gates_available=sorted(gates),
            note=READ_ONLY_NOTE,
        )

"""Score one input and gate it: the domain steps behind ``agent-rl-sandbox score``, as one plain
function that returns an :class:`~agent_rl_sandbox.schemas.reward.EvalReport` (no printing, no exit
codes; the CLI renders the report and decides the exit status).

Order of the checks: the gates file and the gate's name, then the reward spec, then scoring, then
the store-specific "nothing scored" checks, then unhooks and the gate. Every input problem raises
:class:`~agent_rl_sandbox.tools.evals._inputs.EvalInputError` (an ``ActionError``) with a next step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.reward import EvalReport
from agent_rl_sandbox.tools.evals._gates import count_validated, evaluate_gate, load_gates
from agent_rl_sandbox.tools.evals._harness import load_unhooks, score_path
from agent_rl_sandbox.tools.evals._inputs import EvalInputError, load_reward_spec
from agent_rl_sandbox.tools.formats.signing import export_key

StoreScorer = Callable[[list[str] | None, str | None], EvalReport]
"""Scores stored trajectories: ``(session_ids, task_id) -> EvalReport``; ``session_ids`` is ``None``
for every finished trajectory (filtered by ``task_id`` when given). The composition root builds one
from the store and the sandbox (e.g. around :func:`~agent_rl_sandbox.tools.evals.score_store`)."""

_LIST_HINT = "`agent-rl-sandbox trajectories list` shows the stored trajectories (--task, --agent)"


def is_store_input(path: str | Path) -> bool:
    """True when ``path`` names the store: ``store`` or ``store:ID,ID``."""
    text = str(path)
    return text == "store" or text.startswith("store:")


def store_session_ids(path: str | Path) -> list[str] | None:
    """The ids named in ``store:ID,ID`` (``None`` for plain ``store``: every finished trajectory)."""
    return [s for s in str(path).removeprefix("store").removeprefix(":").split(",") if s] or None


def check_store_report(report: EvalReport, path: str, task_id: str | None) -> None:
    """Raise :class:`EvalInputError` when a store input scored nothing, or a session named in
    ``store:ID,ID`` could not be scored (unknown, still running): that is bad input, not a score."""
    named = store_session_ids(path) or []
    problems = "; ".join(f"{p.source}: {p.message}" for p in report.problems[:5])
    more = f" (+{len(report.problems) - 5} more)" if len(report.problems) > 5 else ""
    if named and report.problems:
        n, of = len(report.problems), len(set(named))
        raise EvalInputError(
            f"{n} of {of} named trajector{'y' if of == 1 else 'ies'} could not be scored: {problems}{more}",
            f"check the ids: {_LIST_HINT}; only finished trajectories can be scored",
        )
    if report.stats.trajectories == 0:
        where = f"match task {task_id!r}" if task_id else "are in the store"
        if report.problems:
            raise EvalInputError(f"no trajectory could be scored: {problems}{more}", _LIST_HINT)
        raise EvalInputError(
            f"no finished trajectories {where} ({report.source}): nothing was scored",
            f"{_LIST_HINT}; finish an episode with sandbox_finish, or import trajectories with `agent-rl-sandbox import`",
        )


def score_and_gate(
    path: str,
    *,
    home: Path,
    gate: str | None = None,
    spec: Path | None = None,
    tasks: Mapping[str, Any] | None = None,
    task_id: str | None = None,
    baseline: Path | None = None,
    unhooks: Path | None = None,
    score_store: StoreScorer | None = None,
) -> EvalReport:
    """Score ``path`` and, when ``gate`` is named, evaluate that gate on the report.

    ``path`` is a Port Daddy suite, an ATIF file or folder (see :func:`score_path`), or ``store`` /
    ``store:ID,ID`` (scored by ``score_store``). ``home`` holds ``gates.toml`` (built-in gates
    otherwise) and ``export.key``: a file's ATIF provenance is trusted only when this home signed
    it (see :mod:`agent_rl_sandbox.tools.formats.signing`); ``spec`` is a reward-spec file (JSON or TOML) for ATIF input, else the spec of
    ``task_id`` / each document's task among ``tasks`` (``Task`` objects by id; read only for ATIF input, so a lazy mapping is never loaded for a suite). ``unhooks`` is a JSON
    file whose validated unhooks add to ``stats.validated_unhooks``; ``baseline`` is a report for the
    gate's regression check. The returned report carries the verdict in ``gate`` (``None`` when no
    gate is named); a failed gate is a verdict, not an error.

    Raises :class:`EvalInputError` for an unknown gate, an invalid gates file, spec, unhooks file or
    input, a store input without ``score_store``, or a store input that scored nothing; an
    ``ActionError`` for an unreadable or malformed ``export.key``.
    """
    gates, gates_file = load_gates(home)
    if gate is not None and gate not in gates:
        raise EvalInputError(
            f"unknown gate {gate!r}", f"use one of {', '.join(sorted(gates))} or add it to {home / 'gates.toml'}"
        )
    spec_obj = load_reward_spec(spec) if spec is not None else None
    if is_store_input(path):
        if score_store is None:
            raise EvalInputError("scoring from the store needs the store", "use the CLI or pass score_store=")
        report = score_store(store_session_ids(path), task_id)
        check_store_report(report, path, task_id)
    else:
        key = export_key(home)  # files are trusted only if this home signed them
        report = score_path(path, spec=spec_obj, tasks=tasks, task_id=task_id, export_key=key)
    if unhooks is not None:
        extra = count_validated(load_unhooks(unhooks))
        stats = report.stats.model_copy(update={"validated_unhooks": report.stats.validated_unhooks + extra})
        report = report.model_copy(update={"stats": stats})
    if gate is not None:
        base_dir = gates_file.parent if gates_file is not None else home
        report = report.model_copy(
            update={"gate": evaluate_gate(report, gate, gates[gate], base_dir=base_dir, baseline=baseline)}
        )
    return report

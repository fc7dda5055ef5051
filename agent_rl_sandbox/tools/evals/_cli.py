"""``agent-rl-sandbox score PATH [--gate NAME] [--json]``: score, render, and gate for CI.

Exit status: 0 scored (and the named gate passed), 1 the named gate failed, 2 the input could not
be read or is invalid (the message says which file and JSON path, and what to do). Nothing scored
(every file invalid, no stored trajectory matching) and a named ``store:ID`` that cannot be scored
are invalid input too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.reward import EvalReport, GateVerdict
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals._gates import count_validated, evaluate_gate, load_gates
from agent_rl_sandbox.tools.evals._harness import load_unhooks, score_path
from agent_rl_sandbox.tools.evals._inputs import EvalInputError, load_reward_spec
from agent_rl_sandbox.tools.evals._report import report_json
from agent_rl_sandbox.tools.formats.signing import export_key

EXIT_OK, EXIT_GATE_FAILED, EXIT_BAD_INPUT = 0, 1, 2
MAX_TABLE_ROWS = 50


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.3f}".rstrip("0").rstrip(".") or "0"
    return str(x)


def render_report(report: EvalReport, console: Any) -> None:
    """Print ``report`` (and its gate verdict) as rich tables."""
    from rich.table import Table

    st = report.stats
    summary = Table(title=f"{report.kind}: {report.source}", show_header=False)
    summary.add_column("metric")
    summary.add_column("value", justify="right")
    for key in (
        "trajectories", "passed", "failed", "pass_rate", "mean_reward", "safety_violations", "unscorable_criteria",
        "problems", "unscorable_share", "self_report_only", "loops", "malformed_tool_calls", "groups",
        "zero_variance_groups", "zero_variance_share", "validated_unhooks",
    ):
        summary.add_row(key, _fmt(getattr(st, key)))
    console.print(summary)
    if report.by_task:
        t = Table("task", "attempts", "passed", "pass rate", "mean reward", "variance", "zero var", title="by task")
        for g in report.by_task[:MAX_TABLE_ROWS]:
            t.add_row(g.task_id, str(g.attempts), str(g.passed), _fmt(g.pass_rate), _fmt(g.mean_reward), _fmt(g.reward_variance), _fmt(g.zero_variance))
        console.print(t)
    if report.trajectories:
        t = Table("session", "task", "reward", "passed", "self-report only", "failed / unscorable", title="trajectories")
        for s in report.trajectories[:MAX_TABLE_ROWS]:
            bad = ", ".join(s.failed_criteria + [f"{c} (error)" for c in s.error_criteria])
            t.add_row(s.session_id, s.task_id or "-", _fmt(s.reward), _fmt(s.passed), _fmt(s.self_report_only), bad)
        if len(report.trajectories) > MAX_TABLE_ROWS:
            t.caption = f"first {MAX_TABLE_ROWS} of {len(report.trajectories)}; --json has all"
        console.print(t)
    if report.summary is not None:
        sm = report.summary
        t = Table(*("taskCount passed failed averageReward evalGatePassed unhooksReady deployable".split()), title="Port Daddy summary")
        t.add_row(str(sm.task_count), str(sm.passed), str(sm.failed), _fmt(sm.average_reward), _fmt(sm.eval_gate_passed), _fmt(sm.unhooks_ready), _fmt(sm.deployable))
        console.print(t)
    for p in report.problems[:MAX_TABLE_ROWS]:
        console.print(f"[red]problem[/red] {p.source} {p.where}: {p.message}", markup=True, highlight=False)
    for w in report.warnings:
        console.print(f"[yellow]warning[/yellow] {w}", highlight=False)
    if report.gate is not None:
        render_verdict(report.gate, console)


def render_verdict(v: GateVerdict, console: Any) -> None:
    from rich.table import Table

    t = Table("check", "threshold", "measured", "result", "what would change it", title=f"gate {v.gate}: {'PASSED' if v.passed else 'FAILED'}")
    for c in v.checks:
        colour = {"pass": "green", "fail": "red", "error": "red"}[c.status]
        measured = "-" if c.measured is None else _fmt(c.measured)
        t.add_row(c.name, f"{c.comparison} {_fmt(c.threshold)}", measured, f"[{colour}]{c.status}[/{colour}]", c.what_would_change)
    console.print(t)


_LIST_HINT = "`agent-rl-sandbox trajectories list` shows the stored trajectories (--task, --agent)"


def _check_store_report(report: EvalReport, path: str, task_id: str | None) -> None:
    """Raise :class:`EvalInputError` when a store input scored nothing, or a session named in
    ``store:ID,ID`` could not be scored (unknown, still running): that is bad input, not a score."""
    named = [s for s in path.removeprefix("store").removeprefix(":").split(",") if s]
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


def run_score(
    settings: Settings,
    path: str,
    *,
    gate: str | None = None,
    as_json: bool = False,
    spec: Path | None = None,
    task_id: str | None = None,
    baseline: Path | None = None,
    unhooks: Path | None = None,
    out: Path | None = None,
    console: Any = None,
) -> int:
    """Score ``path``, evaluate ``gate`` when named, print a table or JSON; returns the exit status."""
    from rich.console import Console

    console = console or Console()
    err = Console(stderr=True)
    services = None
    try:
        gates, gates_file = load_gates(settings.home)
        if gate is not None and gate not in gates:
            raise EvalInputError(f"unknown gate {gate!r}", f"use one of {sorted(gates)} or add it to {settings.home / 'gates.toml'}")
        spec_obj = load_reward_spec(spec) if spec is not None else None
        tasks = None
        is_store = path == "store" or path.startswith("store:")
        if is_store:
            from agent_rl_sandbox.services import Services

            services = Services.build(settings)
        elif spec_obj is None:
            from agent_rl_sandbox.tools.sandbox import discover_tasks

            tasks = discover_tasks(settings.task_dirs)[0]
        key = None if is_store else export_key(settings.home)  # files are trusted only if this home signed them
        report = score_path(path, services=services, spec=spec_obj, tasks=tasks, task_id=task_id, export_key=key)
        if is_store:
            _check_store_report(report, path, task_id)
        if unhooks is not None:
            extra = count_validated(load_unhooks(unhooks))
            report = report.model_copy(update={"stats": report.stats.model_copy(update={"validated_unhooks": report.stats.validated_unhooks + extra})})
        if gate is not None:
            base_dir = gates_file.parent if gates_file is not None else settings.home
            report.gate = evaluate_gate(report, gate, gates[gate], base_dir=base_dir, baseline=baseline)
        text = report_json(report)
        if out is not None:
            out.write_text(text, encoding="utf-8")
    except ActionError as e:  # EvalInputError, store errors: the input is the problem
        err.print(f"error: {e.agent_text()}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except OSError as e:  # --out not writable
        err.print(f"error: cannot write {out}: {e.strerror or e}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    finally:
        if services is not None:
            services.close()
    if as_json:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        render_report(report, console)
    if report.gate is not None and not report.gate.passed:
        return EXIT_GATE_FAILED
    return EXIT_OK

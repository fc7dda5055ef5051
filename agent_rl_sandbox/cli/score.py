"""``agent-rl-sandbox score PATH [--gate NAME] [--json]``: score, render, and gate for CI.

Exit statuses (the package's rule): 0 scored (and the named gate passed), 1 the named gate failed,
2 the input could not be read or is invalid (the message says which file and JSON path, and what
to do). Nothing scored (every file invalid, no stored trajectory matching) and a named ``store:ID``
that cannot be scored are invalid input too. The scoring itself is
:func:`agent_rl_sandbox.tools.evals.score_and_gate`; this module builds the store for ``store``
inputs, renders the report and applies the rule.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, fold_ids, settings, table_console
from agent_rl_sandbox.cli._outcome import BadInput, verdict

if TYPE_CHECKING:
    from rich.console import Console

    from agent_rl_sandbox.schemas.reward import EvalReport, GateVerdict, ScoreReport

MAX_TABLE_ROWS = 50
MAX_CRITERIA_TABLES = 5
"""A report of at most this many trajectories (``store:ID``, one ATIF file) also prints each one's
criteria table (every criterion with its explanation); a bigger one names the failed ones."""


def score(
    path: Annotated[
        str,
        typer.Argument(metavar="PATH", help="Port Daddy suite JSON, ATIF file or folder, or `store` / `store:ID,ID`."),
    ],
    gate: Annotated[
        str | None, typer.Option("--gate", metavar="NAME", help="Evaluate this named gate; exit 1 when it fails.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as canonical JSON.")] = False,
    spec: Annotated[
        Path | None, typer.Option("--spec", metavar="FILE", help="Reward spec (JSON or TOML) for ATIF input.")
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", metavar="TASK_ID", help="Task whose spec scores ATIF input; filter for `store`."),
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", metavar="FILE", help="Baseline report for the gate's regression check.")
    ] = None,
    unhooks: Annotated[
        Path | None,
        typer.Option("--unhooks", metavar="FILE", help="JSON list of unhooks (name, command|procedure, validated)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Also write the JSON report to this file.")
    ] = None,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Score trajectories deterministically; exit 1 when --gate fails, 2 on unreadable or invalid input."""
    from agent_rl_sandbox.tools.evals import is_store_input, report_json, score_and_gate, score_store

    resolved = settings(home, task_dir)
    if not as_json and gate is None and (spec, task, baseline, unhooks, out) == (None,) * 5:
        streamed = _big_suite(path)
        if streamed is not None:  # a suite over the model path's size cap, scored by the streaming scorer
            render_report(streamed[0], table_console(), trajectory_count=streamed[1])
            verdict(True)
    services = None

    def from_store(session_ids: list[str] | None, task_id: str | None) -> EvalReport:
        nonlocal services
        from agent_rl_sandbox.services import Services

        services = Services.build(resolved)
        return score_store(services, session_ids=session_ids, task_id=task_id)

    tasks = None
    if spec is None and not is_store_input(path):
        from agent_rl_sandbox.tools.sandbox import discover_tasks

        tasks = discover_tasks(resolved.task_dirs)[0]
    try:
        report = score_and_gate(
            path,
            home=resolved.home,
            gate=gate,
            spec=spec,
            tasks=tasks,
            task_id=task,
            baseline=baseline,
            unhooks=unhooks,
            score_store=from_store,
        )
    finally:
        if services is not None:
            services.close()
    text = report_json(report)
    if out is not None:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            raise BadInput(
                f"cannot write {out}: {e.strerror or e}", "pass an --out path in a writable folder"
            ) from None
    if as_json:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        render_report(report, table_console())
    verdict(report.gate is None or report.gate.passed)


def _big_suite(path: str) -> tuple[EvalReport, int] | None:
    """For a Port Daddy suite file over the model path's size cap that the streaming scorer takes
    (``tools._suite_fast``, no cap): the report's tables' content (the first ``MAX_TABLE_ROWS``
    groups and trajectories) and its number of trajectories; else ``None`` (the usual path then
    reports the file's defect or size)."""
    import os

    from agent_rl_sandbox.tools.evals._inputs import MAX_INPUT_BYTES

    if os.path.splitext(path)[1].lower() in (".jsonl", ".ndjson") or not os.path.isfile(path):
        return None
    if os.path.getsize(path) <= MAX_INPUT_BYTES:
        return None
    from agent_rl_sandbox.schemas.reward import EvalReport
    from agent_rl_sandbox.tools._suite_fast import Declined, score_suite_to

    got: list[Any] = []

    def keep(small: dict, by_task: list, trajectories: list, count: int) -> None:
        got.extend((small, by_task, trajectories, count))

    def no_write(data: bytes) -> None:  # pragma: no cover - summary= writes nothing
        raise AssertionError("summary mode writes nothing")

    try:
        score_suite_to(path, os.path.basename(path), no_write, summary=keep)
    except (Declined, OSError):
        return None
    small, by_task, trajectories, count = got
    fields = {k: small[k] for k in ("kind", "source", "stats", "problems", "warnings", "summary")}
    report = EvalReport.model_validate({**fields, "by_task": by_task, "trajectories": trajectories})
    return report, count


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.3f}".rstrip("0").rstrip(".") or "0"
    return str(x)


def render_report(report: EvalReport, console: Console, trajectory_count: int | None = None) -> None:
    """Print ``report`` (and its gate verdict) as rich tables. ``trajectory_count``: how many
    trajectories the report has when ``report.trajectories`` holds only the first ones."""
    from rich.table import Table

    st = report.stats
    summary = Table(title=f"{report.kind}: {report.source}", show_header=False)
    summary.add_column("metric")
    summary.add_column("value", justify="right")
    for key in (
        "trajectories",
        "passed",
        "failed",
        "pass_rate",
        "mean_reward",
        "safety_violations",
        "unscorable_criteria",
        "problems",
        "unscorable_share",
        "self_report_only",
        "loops",
        "malformed_tool_calls",
        "groups",
        "zero_variance_groups",
        "zero_variance_share",
        "validated_unhooks",
    ):
        summary.add_row(key, _fmt(getattr(st, key)))
    console.print(summary)
    if report.by_task:
        t = Table("task", "attempts", "passed", "pass rate", "mean reward", "variance", "zero var", title="by task")
        fold_ids(t, "task")
        for g in report.by_task[:MAX_TABLE_ROWS]:
            t.add_row(
                g.task_id,
                str(g.attempts),
                str(g.passed),
                _fmt(g.pass_rate),
                _fmt(g.mean_reward),
                _fmt(g.reward_variance),
                _fmt(g.zero_variance),
            )
        console.print(t)
    if report.trajectories:
        t = Table(
            "session", "task", "reward", "passed", "self-report only", "failed / unscorable", title="trajectories"
        )
        fold_ids(t, "session", "task")
        for s in report.trajectories[:MAX_TABLE_ROWS]:
            bad = ", ".join(s.failed_criteria + [f"{c} (error)" for c in s.error_criteria])
            t.add_row(s.session_id, s.task_id or "-", _fmt(s.reward), _fmt(s.passed), _fmt(s.self_report_only), bad)
        total = len(report.trajectories) if trajectory_count is None else trajectory_count
        if total > MAX_TABLE_ROWS:
            t.caption = f"first {MAX_TABLE_ROWS} of {total}; --json has all"
        elif total > MAX_CRITERIA_TABLES:
            t.caption = "`score store:ID` or --json: every criterion with its explanation"
        console.print(t)
        if total <= MAX_CRITERIA_TABLES:
            for s in report.trajectories:
                render_criteria(s, console)
    if report.summary is not None:
        sm = report.summary
        t = Table(
            *("taskCount passed failed averageReward evalGatePassed unhooksReady deployable".split()),
            title="Port Daddy summary",
        )
        t.add_row(
            str(sm.task_count),
            str(sm.passed),
            str(sm.failed),
            _fmt(sm.average_reward),
            _fmt(sm.eval_gate_passed),
            _fmt(sm.unhooks_ready),
            _fmt(sm.deployable),
        )
        console.print(t)
    for p in report.problems[:MAX_TABLE_ROWS]:
        console.print(f"[red]problem[/red] {p.source} {p.where}: {p.message}", markup=True, highlight=False)
    from agent_rl_sandbox.tools.evals import is_info_note

    for w in report.warnings:  # good news (every ATIF trajectory a verified export) is a note, not a warning
        label = "[cyan]note[/cyan]" if is_info_note(w) else "[yellow]warning[/yellow]"
        console.print(f"{label} {w}", highlight=False)
    if report.gate is not None:
        render_verdict(report.gate, console)


def render_criteria(s: ScoreReport, console: Console) -> None:
    """Print every criterion of one trajectory's score: its id, status, value, weight and
    explanation (the same data as ``score --json``, the MCP tool ``eval_score`` and the web page's
    trajectory view). Explanations are printed as text, never read as markup."""
    from rich.table import Table
    from rich.text import Text

    verdict_word = "passed" if s.passed else "failed"
    t = Table(
        "criterion",
        "status",
        "value",
        "weight",
        "explanation",
        title=f"criteria of {s.session_id}: reward {_fmt(s.reward)}, {verdict_word} "
        f"({s.aggregation}, pass threshold {_fmt(s.pass_threshold)})",
    )
    t.columns[0].no_wrap = True
    fold_ids(t, "criterion", "explanation")
    for c in s.criteria:
        status = c.status + (" (safety)" if c.safety_violation else "")
        t.add_row(Text(c.id), status, _fmt(c.value), _fmt(c.weight), Text(c.explanation))
    console.print(t)


def render_verdict(v: GateVerdict, console: Console) -> None:
    """Print a gate verdict as a table: each check, its threshold, what was measured and what would change it."""
    from rich.table import Table

    t = Table(
        "check",
        "threshold",
        "measured",
        "result",
        "what would change it",
        title=f"gate {v.gate}: {'PASSED' if v.passed else 'FAILED'}",
    )
    for c in v.checks:
        colour = {"pass": "green", "fail": "red", "error": "red"}[c.status]
        measured = "-" if c.measured is None else _fmt(c.measured)
        t.add_row(
            c.name,
            f"{c.comparison} {_fmt(c.threshold)}",
            measured,
            f"[{colour}]{c.status}[/{colour}]",
            c.what_would_change,
        )
    console.print(t)

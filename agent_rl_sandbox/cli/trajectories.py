"""``agent-rl-sandbox trajectories list | show``: what the store holds, as tables or JSON.

Exit statuses (the package's rule): ``list`` 0 (an empty result is an answer); ``show`` 2 for an
unknown id. Stored content is printed as ``rich.text.Text``, never read as markup.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import (
    HomeOpt,
    TaskDirOpt,
    fit_to_width,
    group,
    settings,
    table_console,
    unknown_task,
)
from agent_rl_sandbox.cli._outcome import BadInput

app = group("List and show stored trajectories.")


def _short(value, limit: int | None = 60) -> str:
    """One line of at most ``limit`` characters (whitespace collapsed, ``…`` when cut); the whole
    value on one line when ``limit`` is ``None`` (output piped: nothing is cut there)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _fmt_opt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@app.command("list")
def list_trajectories(
    task: Annotated[str | None, typer.Option("--task", metavar="TASK_ID", help="Only this task id.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", metavar="NAME", help="Only this agent name.")] = None,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", min=1, help="Most trajectories to list (newest first).")
    ] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summaries as JSON.")] = False,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """List stored trajectories, newest first: id, task, agent, status, steps, reward, passed.
    Exit 2 for a --task that no task folder and no stored trajectory knows."""
    from rich.table import Table
    from rich.text import Text

    from agent_rl_sandbox.schemas.tools import TrajectoryListOutput
    from agent_rl_sandbox.services import Services

    services = Services.build(settings(home, task_dir))
    try:
        rows, total = services.store.trajectories.list(task_id=task, agent_name=agent, limit=limit, offset=0)
        if task is not None and not total and task not in services.sandbox.tasks and not _stored_task(services, task):
            raise unknown_task(task)
    finally:
        services.close()
    if as_json:
        out = TrajectoryListOutput(trajectories=rows, total=total, next_offset=len(rows) if len(rows) < total else None)
        typer.echo(out.model_dump_json(indent=2))
        return
    if not rows:
        which = ", ".join(f"{k} {v!r}" for k, v in (("task", task), ("agent", agent)) if v)
        typer.echo(f"no trajectories{' match ' + which if which else ' in the store'}")
        return
    table = Table(
        title="trajectories", caption=f"{len(rows)} of {total}" + ("; --limit N for more" if len(rows) < total else "")
    )
    for name in ("session", "task", "agent", "status", "steps", "reward", "passed", "self-report only", "created"):
        table.add_column(name, justify="right" if name in ("steps", "reward") else "left")
    for s in rows:
        table.add_row(
            s.session_id,
            Text(s.task_id or "-"),
            Text(s.agent.name),
            s.status,
            str(s.step_count),
            _fmt_opt(s.reward),
            _fmt_opt(s.passed),
            _fmt_opt(s.self_report_only),
            s.created_at[:19],
        )
    console = table_console()
    # a narrow terminal drops the least needed columns rather than split an id
    fit_to_width(console, table, ids=("session", "task", "reward"), optional=("created", "steps", "status", "agent"))
    console.print(table)


def _stored_task(services, task: str) -> bool:
    """Whether any stored trajectory has ``task`` as its task id (whatever the agent filter)."""
    return bool(services.store.trajectories.list(task_id=task, limit=1)[1])


@app.command("show")
def show(
    session_id: Annotated[
        str, typer.Argument(metavar="SESSION_ID", help="Trajectory id (see `agent-rl-sandbox trajectories list`).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory (ATIF-shaped JSON).")] = False,
    home: HomeOpt = None,
) -> None:
    """Print a trajectory: its summary, a table of its steps and its score (every criterion with
    its weight and explanation). Exit 2 for an unknown id."""
    from rich.table import Table
    from rich.text import Text

    from agent_rl_sandbox.schemas.tools import EvalScoreInput
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.errors import ActionError

    services = Services.build(settings(home))
    try:
        traj = services.store.trajectories.get(session_id)
        score, score_error = None, None
        if as_json:
            pass
        elif traj.status != "finished":
            score_error = "still running: scored when it finishes"
        else:  # the same score as `score store:ID`, the MCP tool eval_score and the web page
            try:
                score = services.sandbox.eval_score(EvalScoreInput(session_id=session_id)).report
            except ActionError as e:
                score_error = e.message + (f" ({e.hint})" if e.hint else "")
    except ActionError as e:
        raise BadInput(e.message, "`agent-rl-sandbox trajectories list` shows the stored ids") from None
    finally:
        services.close()
    if as_json:
        typer.echo(traj.model_dump_json(indent=2, exclude_none=True))
        return
    console = table_console()
    summary = Table(title=f"trajectory {traj.session_id}", show_header=False)
    summary.add_column("field", no_wrap=True)
    summary.add_column("value", overflow="fold")
    agent = traj.agent.name + (f" ({traj.agent.model_name})" if traj.agent.model_name else "")
    for key, value in (
        ("session", traj.session_id),
        ("task", traj.task_id),
        ("behaviour", traj.behaviour),
        ("split", traj.split),
        ("agent", agent),
        ("origin", traj.origin),
        ("sandbox", traj.sandbox_id),
        ("status", traj.status),
        ("created", traj.created_at),
        ("finished", traj.finished_at),
        ("steps", len(traj.steps)),
        ("reward", traj.reward),
        ("passed", traj.passed),
        ("self_report_only", traj.self_report_only),
        ("final message", traj.final_message),
    ):
        summary.add_row(key, Text(_fmt_opt(value)))  # Text: stored content is never read as markup
    console.print(summary)
    # a terminal gets a preview of each step's arguments and observation; piped output gets them whole
    preview = console.is_terminal
    steps = Table(title="steps")
    steps.add_column("step", no_wrap=True, justify="right")
    steps.add_column("provenance", no_wrap=True)
    steps.add_column("tool", no_wrap=True, overflow="fold")
    steps.add_column("args", overflow="fold")
    steps.add_column("outcome", no_wrap=True)
    steps.add_column("exit", justify="right")
    steps.add_column("observation", overflow="fold")
    for s in traj.steps:
        results = s.observation.results if s.observation else []
        exit_code = "-" if s.exit_code is None else str(s.exit_code)
        if not s.tool_calls:
            steps.add_row(
                str(s.step_id),
                s.provenance,
                f"({s.source} message)",
                "",
                s.outcome,
                exit_code,
                Text(_short(s.message, 60 if preview else None)),
            )
            continue
        for c in s.tool_calls:
            res = next(
                (r for r in results if r.source_call_id == c.tool_call_id),
                results[0] if len(s.tool_calls) == 1 and results else None,
            )
            args = ", ".join(f"{k}={_short(v, 40 if preview else None)}" for k, v in c.arguments.items())
            steps.add_row(
                str(s.step_id),
                s.provenance,
                Text(c.function_name),
                Text(_short(args, 80 if preview else None)),
                s.outcome,
                exit_code,
                Text(_short((res.content or "") if res else "", 60 if preview else None)),
            )
    console.print(steps)
    if score is not None:
        from agent_rl_sandbox.cli.score import render_criteria

        render_criteria(score, console)
    else:
        console.print(Text(f"not scored: {score_error}"))
    _print_hidden_checks(console, settings(home).reports_dir, traj.session_id)


def _print_hidden_checks(console, reports: Path, session_id: str) -> None:
    """The operator's view of the hidden verifier (every check with its name, arguments and
    detail: :func:`~agent_rl_sandbox.tools.sandbox._verify.operator_report_text`). Agents never get
    this text (they see the verdict only, on every split); prints nothing without a report."""
    from rich.text import Text

    from agent_rl_sandbox.tools.sandbox._verify import operator_report_text

    try:
        text = operator_report_text(reports, session_id)
    except (OSError, ValueError) as e:
        console.print(Text(f"hidden checks: the report of {session_id} in {reports} is unreadable ({e})"))
        return
    if text is not None:
        console.print(Text("hidden checks (operator only, from " + str(reports) + "):\n" + text))

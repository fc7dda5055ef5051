"""``agent-rl-sandbox tasks list | show | check``: the task registry (built-in and ``--task-dir``).

Exit statuses (the package's rule): ``list`` 1 when a task folder failed to load; ``show`` 2 for an
unknown task; ``check`` 1 when a task's oracle does not pass or its known-bad script is not scored
strictly lower, 2 for an unknown task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, fold_ids, group, settings, table_console
from agent_rl_sandbox.cli._outcome import BadInput, verdict

app = group("List, show and check tasks.")

_LIST_HINT = "see `agent-rl-sandbox tasks list`"


@app.command("list")
def list_tasks(
    task_dir: TaskDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks (and load problems) as JSON.")] = False,
) -> None:
    """List every task (built-in and from --task-dir); report folders that failed to load (exit 1)."""
    from rich.table import Table

    from agent_rl_sandbox.tools.sandbox import discover_tasks

    found, problems = discover_tasks(settings(task_dirs=task_dir).task_dirs)
    tasks = sorted(found.values(), key=lambda t: t.id)
    if as_json:
        rows = [
            {
                "id": t.id,
                "behaviour": t.config.behaviour,
                "split": t.config.split,
                "description": t.config.description,
                "root": str(t.root),
            }
            for t in tasks
        ]
        typer.echo(json.dumps({"tasks": rows, "problems": [str(p) for p in problems]}, indent=2))
        verdict(not problems)
    table = Table("id", "behaviour", "split", "description")
    table.columns[0].no_wrap, table.columns[0].overflow = True, "fold"  # never cut an id
    table.columns[1].overflow = "fold"
    for t in tasks:
        table.add_row(t.id, t.config.behaviour, t.config.split, t.config.description)
    console = table_console()
    console.print(table)
    for p in problems:
        console.print(f"[red]problem:[/red] {p}")
    verdict(not problems)


@app.command("show")
def show(
    task_id: Annotated[str, typer.Argument(metavar="TASK_ID", help="Task id (see `agent-rl-sandbox tasks list`).")],
    task_dir: TaskDirOpt = None,
) -> None:
    """Print a task's config, reward spec and instruction. Exit 2 for an unknown task."""
    from agent_rl_sandbox.tools.sandbox import discover_tasks

    found, _ = discover_tasks(settings(task_dirs=task_dir).task_dirs)
    if task_id not in found:
        raise BadInput(f"unknown task {task_id!r}", _LIST_HINT)
    t = found[task_id]
    typer.echo(f"# {t.id}  ({t.root})\n")
    # the spec once, in its own section (not also as the config's "reward" / "reward_spec" fields)
    typer.echo(t.config.model_dump_json(indent=2, exclude={"reward", "reward_spec"}))
    source = f" (from {t.config.reward_spec})" if t.config.reward_spec else ""
    typer.echo(f"\n## reward spec{source}\n" + t.reward_spec.model_dump_json(indent=2))
    typer.echo("\n## instruction\n" + t.instruction)


@app.command("check")
def check(
    task_ids: Annotated[
        list[str] | None, typer.Argument(metavar="TASK_ID", help="Tasks to check (default: all).")
    ] = None,
    task_dir: TaskDirOpt = None,
    home: HomeOpt = None,
) -> None:
    """Run each task's oracle (must pass) and known-bad script (must fail, scoring strictly lower).

    The scripted runs go to a throwaway store unless --home is given, so they never mix with real
    trajectories (and never reach a training export or a gate). Exit 1 when a check fails, 2 for an
    unknown task. Prints a line per task on stderr as each check ends (a check runs both scripts in
    sandboxes: seconds per task)."""
    import tempfile
    import time

    from rich.table import Table

    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.sandbox import direction_check

    scratch = tempfile.TemporaryDirectory(prefix="ars-tasks-check-") if home is None else None
    try:
        resolved = settings(Path(scratch.name) if scratch else home, task_dir)
        if scratch is not None:
            resolved = resolved.model_copy(update={"database_url": None})
        services = Services.build(resolved)
        try:
            unknown = [t for t in task_ids or [] if t not in services.sandbox.tasks]
            if unknown:
                raise BadInput(
                    f"unknown task{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}", _LIST_HINT
                )
            ids = task_ids or sorted(services.sandbox.tasks)
            if ids:
                typer.echo(f"checking {len(ids)} task(s): oracle must pass, known-bad must score lower", err=True)
            rows = []
            for i, tid in enumerate(ids, 1):
                t0 = time.monotonic()
                r = direction_check(services.sandbox, tid)
                rows.append(r)
                typer.echo(
                    f"[{i}/{len(ids)}] {tid}: {'ok' if r.ok else 'FAIL'} (oracle {r.good_reward:.3f}, "
                    f"known-bad {r.bad_reward:.3f}) in {time.monotonic() - t0:.1f} s",
                    err=True,
                )
        finally:
            services.close()
    finally:
        if scratch is not None:
            scratch.cleanup()
    if not rows:
        raise BadInput("no tasks to check", "add a task folder with --task-dir or AGENT_RL_SANDBOX_TASK_DIRS")
    table = fold_ids(Table("task", "oracle reward", "known-bad reward", "verdict", "problem"), "task")
    for r in rows:
        table.add_row(
            r.task_id,
            f"{r.good_reward:.3f}",
            f"{r.bad_reward:.3f}",
            "ok" if r.ok else "[red]FAIL[/red]",
            "; ".join(r.problems),
        )
    table_console().print(table)
    verdict(all(r.ok for r in rows))

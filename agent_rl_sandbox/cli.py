"""The human's entry point: ``agent-rl-sandbox serve | demo | tasks ...``.

Commands import their heavy modules lazily, so ``serve`` can claim stdout before any tool code is
imported.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Sandboxes, trajectories and rewards for coding agents."
)
tasks_app = typer.Typer(no_args_is_help=True, help="List, show and check tasks.")
app.add_typer(tasks_app, name="tasks")

TaskDirOpt = Annotated[
    list[Path] | None,
    typer.Option("--task-dir", help="Extra task folder (repeatable); adds to AGENT_RL_SANDBOX_TASK_DIRS."),
]
HomeOpt = Annotated[
    Path | None, typer.Option("--home", help="Home folder (default: $AGENT_RL_SANDBOX_HOME or ~/.agent-rl-sandbox).")
]


def _settings(home: Path | None = None, task_dirs: list[Path] | None = None):
    from agent_rl_sandbox.settings import Settings

    base = Settings.from_env(home=home)
    if task_dirs:
        base = base.model_copy(update={"task_dirs": (*base.task_dirs, *task_dirs)})
    return base


@app.command()
def serve(home: HomeOpt = None, task_dir: TaskDirOpt = None) -> None:
    """Run the MCP server over stdio (what Claude Code and Codex launch)."""
    from agent_rl_sandbox.server.stdio import serve_stdio

    def build():
        from agent_rl_sandbox.server.app import build_server

        return build_server(_settings(home, task_dir))

    serve_stdio(build)


@app.command()
def demo(
    home: HomeOpt = None,
    task_id: Annotated[str, typer.Option("--task", help="Task to play.")] = "claim-before-edit",
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Start the server over stdio, play a good and a careless scripted agent, print their scores."""
    import anyio

    from agent_rl_sandbox.agents.demo import render_demo, run_demo

    settings = _settings(home)
    results = anyio.run(run_demo, settings, task_id)
    if as_json:
        typer.echo(json.dumps([r.__dict__ for r in results], indent=2, default=str))
    else:
        render_demo(results, settings)
    good, careless = results
    ok = good.passed and good.reward == 1.0 and not careless.passed and careless.self_report_only
    raise typer.Exit(0 if ok else 1)


@tasks_app.command("list")
def tasks_list(task_dir: TaskDirOpt = None) -> None:
    """List every task (built-in and from --task-dir); report folders that failed to load."""
    from rich.console import Console
    from rich.table import Table

    from agent_rl_sandbox.tools.sandbox import discover_tasks

    settings = _settings(task_dirs=task_dir)
    found, problems = discover_tasks(settings.task_dirs)
    table = Table("id", "behaviour", "split", "description")
    for t in sorted(found.values(), key=lambda t: t.id):
        table.add_row(t.id, t.config.behaviour, t.config.split, t.config.description)
    console = Console()
    console.print(table)
    for p in problems:
        console.print(f"[red]problem:[/red] {p}")
    raise typer.Exit(1 if problems else 0)


@tasks_app.command("show")
def tasks_show(task_id: str, task_dir: TaskDirOpt = None) -> None:
    """Print a task's config, reward spec and instruction."""
    from agent_rl_sandbox.tools.sandbox import discover_tasks

    found, _ = discover_tasks(_settings(task_dirs=task_dir).task_dirs)
    if task_id not in found:
        typer.echo(f"unknown task {task_id!r}; see `agent-rl-sandbox tasks list`", err=True)
        raise typer.Exit(1)
    t = found[task_id]
    typer.echo(f"# {t.id}  ({t.root})\n")
    typer.echo(t.config.model_dump_json(indent=2, exclude={"reward"}))
    typer.echo("\n## reward spec\n" + t.reward_spec.model_dump_json(indent=2))
    typer.echo("\n## instruction\n" + t.instruction)


@tasks_app.command("check")
def tasks_check(
    task_ids: Annotated[list[str] | None, typer.Argument(help="Tasks to check (default: all).")] = None,
    task_dir: TaskDirOpt = None,
    home: HomeOpt = None,
) -> None:
    """Run each task's oracle (must pass) and known-bad script (must fail, scoring strictly lower)."""
    import anyio
    from rich.console import Console
    from rich.table import Table

    from agent_rl_sandbox.agents.check import check_tasks

    settings = _settings(home, task_dir)
    rows = anyio.run(check_tasks, settings, task_ids or None)
    table = Table("task", "oracle reward", "bad reward", "verdict", "problem")
    for r in rows:
        table.add_row(
            r.task_id, f"{r.oracle_reward:.3f}", f"{r.bad_reward:.3f}", "ok" if r.ok else "[red]FAIL[/red]", r.problem
        )
    Console().print(table)
    raise typer.Exit(0 if rows and all(r.ok for r in rows) else 1)


def main() -> None:  # pragma: no cover - console entry
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

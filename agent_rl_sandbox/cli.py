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
def tasks_list(
    task_dir: TaskDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks (and load problems) as JSON.")] = False,
) -> None:
    """List every task (built-in and from --task-dir); report folders that failed to load (exit 1)."""
    from rich.table import Table

    from agent_rl_sandbox.tools.sandbox import discover_tasks

    settings = _settings(task_dirs=task_dir)
    found, problems = discover_tasks(settings.task_dirs)
    tasks = sorted(found.values(), key=lambda t: t.id)
    if as_json:
        rows = [
            {"id": t.id, "behaviour": t.config.behaviour, "split": t.config.split, "description": t.config.description,
             "root": str(t.root)}
            for t in tasks
        ]
        typer.echo(json.dumps({"tasks": rows, "problems": [str(p) for p in problems]}, indent=2))
        raise typer.Exit(1 if problems else 0)
    table = Table("id", "behaviour", "split", "description")
    table.columns[0].no_wrap, table.columns[0].overflow = True, "fold"  # never cut an id
    table.columns[1].overflow = "fold"
    for t in tasks:
        table.add_row(t.id, t.config.behaviour, t.config.split, t.config.description)
    console = _table_console()
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
    """Run each task's oracle (must pass) and known-bad script (must fail, scoring strictly lower).

    The scripted runs go to a throwaway store unless --home is given, so they never mix with real
    trajectories (and never reach a training export or a gate)."""
    import tempfile

    from rich.console import Console
    from rich.table import Table

    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.sandbox import direction_check

    scratch = tempfile.TemporaryDirectory(prefix="ars-tasks-check-") if home is None else None
    settings = _settings(Path(scratch.name) if scratch else home, task_dir)
    if scratch is not None:
        settings = settings.model_copy(update={"database_url": None})
    services = Services.build(settings)
    try:
        unknown = [t for t in task_ids or [] if t not in services.sandbox.tasks]
        if unknown:
            typer.echo(f"unknown task(s) {unknown}; see `agent-rl-sandbox tasks list`", err=True)
            raise typer.Exit(2)
        rows = [direction_check(services.sandbox, tid) for tid in task_ids or sorted(services.sandbox.tasks)]
    finally:
        services.close()
        if scratch is not None:
            scratch.cleanup()
    table = Table("task", "oracle reward", "bad reward", "verdict", "problem")
    for r in rows:
        verdict = "ok" if r.ok else "[red]FAIL[/red]"
        table.add_row(r.task_id, f"{r.good_reward:.3f}", f"{r.bad_reward:.3f}", verdict, "; ".join(r.problems))
    Console().print(table)
    raise typer.Exit(0 if rows and all(r.ok for r in rows) else 1)


@app.command()
def score(
    path: Annotated[str, typer.Argument(help="Port Daddy suite JSON, ATIF file or folder, or `store` / `store:ID,ID`.")],
    gate: Annotated[str | None, typer.Option("--gate", help="Evaluate this named gate; exit 1 when it fails.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as canonical JSON.")] = False,
    spec: Annotated[Path | None, typer.Option("--spec", help="Reward spec (JSON or TOML) for ATIF input.")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Task whose spec scores ATIF input; filter for `store`.")] = None,
    baseline: Annotated[Path | None, typer.Option("--baseline", help="Baseline report for the gate's regression check.")] = None,
    unhooks: Annotated[Path | None, typer.Option("--unhooks", help="JSON list of unhooks (name, command|procedure, validated).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the JSON report to this file.")] = None,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Score trajectories deterministically; exit 1 when --gate fails, 2 on unreadable or invalid input."""
    from agent_rl_sandbox.tools.evals import run_score

    code = run_score(
        _settings(home, task_dir), path, gate=gate, as_json=as_json, spec=spec, task_id=task,
        baseline=baseline, unhooks=unhooks, out=out,
    )
    raise typer.Exit(code)


hook_app = typer.Typer(no_args_is_help=True, help="Commands that agent clients' hooks call.")
app.add_typer(hook_app, name="hook")


@hook_app.command("claude-code")
def hook_claude_code() -> None:
    """Record one Claude Code hook event (JSON on stdin) as a `hook` step. Prints nothing; always exits 0."""
    from agent_rl_sandbox.agents.claude_code.hook import main as hook_main

    raise typer.Exit(hook_main())


@app.command("import")
def import_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Files to import (ATIF .json/.jsonl, Claude Code or Codex JSONL, chat logs).")],
    fmt: Annotated[
        str | None, typer.Option("--format", help="atif, claude_code, codex or openai_chat (default: detected).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Import trajectories into the store; problems are listed with file and line. Exit 1 on any error."""
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.errors import ActionError

    services = Services.build(_settings(home, task_dir))
    reports, failed = [], False
    try:
        for p in paths:
            try:
                r = services.trajectories.import_file(p, format=fmt)
            except ActionError as e:
                typer.echo(f"{p}: {e.agent_text()}", err=True)
                failed = True
                continue
            reports.append(r)
            failed |= not r.ok
    finally:
        services.close()
    if as_json:
        typer.echo(json.dumps([r.model_dump() | {"ok": r.ok} for r in reports], indent=2))
    else:
        for r in reports:
            redacted = sum(r.redactions.values())
            typer.echo(
                f"{r.file}: {r.format}, {len(r.trajectories)} trajectories, {r.steps} steps"
                f" ({len(r.already_imported)} already imported, {r.missing_results} calls without result,"
                f" {redacted} secrets redacted)"
            )
            for pr in r.problems:
                where = f"{pr.file}:{pr.line}" if pr.line else pr.file
                typer.echo(f"  {pr.severity}: {where}{' ' + pr.path if pr.path else ''}: {pr.message}")
    raise typer.Exit(1 if failed else 0)


@app.command("export")
def export_cmd(
    fmt: Annotated[str, typer.Argument(help="sft, dpo, kto, grpo, minimind_sft, minimind_dpo, minimind_agentic, atif, suite.")],
    out: Annotated[Path | None, typer.Option("--out", help="Folder for <export_id>/ (default: <home>/exports).")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only this task id.")] = None,
    behaviour: Annotated[str | None, typer.Option("--behaviour")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent name.")] = None,
    origin: Annotated[str | None, typer.Option("--origin", help="sandbox, mcp, hook, import, ...")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Created at or after (ISO-8601).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Created before (ISO-8601).")] = None,
    min_reward: Annotated[float | None, typer.Option("--min-reward", help="SFT/DPO-chosen minimum reward.")] = 1.0,
    any_reward: Annotated[bool, typer.Option("--any-reward", help="SFT: include unscored trajectories too.")] = False,
    include_heldout: Annotated[bool, typer.Option("--include-heldout", help="atif/suite only.")] = False,
    include_running: Annotated[bool, typer.Option("--include-running", help="atif/suite only.")] = False,
    validate: Annotated[bool, typer.Option("--validate/--no-validate", help="Run the dataset validator on the result.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Export trajectories as training data (or ATIF / a suite) with a manifest; exit 1 when nothing was
    exported or the validator rejects the file."""
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.errors import ActionError
    from agent_rl_sandbox.tools.trajectories import ExportOptions

    settings = _settings(home, task_dir)
    services = Services.build(settings)
    opts = ExportOptions(
        format=fmt, task_id=task, behaviour=behaviour, agent_name=agent, origin=origin, created_after=since,
        created_before=until, min_reward=None if any_reward else min_reward, include_heldout=include_heldout,
        include_running=include_running,
    )
    try:
        res = services.trajectories.export_to(opts, out or services.trajectories.exports_dir)
    except ActionError as e:
        typer.echo(e.agent_text(), err=True)
        raise typer.Exit(1) from None
    finally:
        services.close()
    code = 0
    if validate:
        from agent_rl_sandbox.tools.datasets import validate_file

        for f in res.manifest.files:
            report = validate_file(res.directory / f.path, kind=f.kind)
            if not report.ok:
                code = 1
                for e in report.errors[:20]:
                    typer.echo(f"invalid: {f.path}:{e.line} {e.json_path} {e.code}: {e.message}", err=True)
    if as_json:
        typer.echo(res.manifest.model_dump_json(indent=2))
    else:
        m = res.manifest
        skipped = ", ".join(f"{k}={v}" for k, v in m.counts.items() if k not in ("considered", "selected"))
        typer.echo(f"{m.format}: {m.rows} rows from {len(m.source_session_ids)} trajectories -> {res.data_path}")
        typer.echo(f"manifest: {res.manifest_path} (sha256 {m.sha256[:16]}...)" + (f"; {skipped}" if skipped else ""))
    raise typer.Exit(code)


trajectories_app = typer.Typer(no_args_is_help=True, help="List and show stored trajectories.")
app.add_typer(trajectories_app, name="trajectories")


def _table_console():
    """A rich Console for tables: the terminal's width, or a generous one when piped (so nothing is cut)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, 200))


def _short(value, limit: int = 60) -> str:
    """One line of at most ``limit`` characters (whitespace collapsed, ``…`` when cut)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fmt_opt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@trajectories_app.command("list")
def trajectories_list(
    task: Annotated[str | None, typer.Option("--task", help="Only this task id.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent name.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Most trajectories to list (newest first).")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summaries as JSON.")] = False,
    home: HomeOpt = None,
) -> None:
    """List stored trajectories, newest first: id, task, agent, status, steps, reward, passed."""
    from rich.table import Table
    from rich.text import Text

    from agent_rl_sandbox.schemas.tools import TrajectoryListOutput
    from agent_rl_sandbox.services import Services

    services = Services.build(_settings(home))
    try:
        rows, total = services.store.list(task_id=task, agent_name=agent, limit=limit, offset=0)
    finally:
        services.close()
    if as_json:
        out = TrajectoryListOutput(trajectories=rows, total=total, next_offset=len(rows) if len(rows) < total else None)
        typer.echo(out.model_dump_json(indent=2))
        raise typer.Exit(0)
    if not rows:
        which = ", ".join(f"{k} {v!r}" for k, v in (("task", task), ("agent", agent)) if v)
        typer.echo(f"no trajectories{' match ' + which if which else ' in the store'}")
        raise typer.Exit(0)
    table = Table(title="trajectories", caption=f"{len(rows)} of {total}" + ("; --limit N for more" if len(rows) < total else ""))
    table.add_column("session", no_wrap=True, overflow="fold")
    table.add_column("task", no_wrap=True, overflow="fold")
    for name in ("agent", "status", "steps", "reward", "passed", "self-report only", "created"):
        table.add_column(name, justify="right" if name in ("steps", "reward") else "left")
    for s in rows:
        table.add_row(
            s.session_id, Text(s.task_id or "-"), Text(s.agent.name), s.status, str(s.step_count), _fmt_opt(s.reward),
            _fmt_opt(s.passed), _fmt_opt(s.self_report_only), s.created_at,
        )
    _table_console().print(table)


@trajectories_app.command("show")
def trajectories_show(
    session_id: Annotated[str, typer.Argument(help="Trajectory id (see `agent-rl-sandbox trajectories list`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory (ATIF-shaped JSON).")] = False,
    home: HomeOpt = None,
) -> None:
    """Print a trajectory: its summary and a table of its steps. Exit 2 for an unknown id."""
    from rich.table import Table
    from rich.text import Text

    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.errors import ActionError

    services = Services.build(_settings(home))
    try:
        traj = services.store.get(session_id)
    except ActionError as e:
        typer.echo(f"error: {e.message}; `agent-rl-sandbox trajectories list` shows the stored ids", err=True)
        raise typer.Exit(2) from None
    finally:
        services.close()
    if as_json:
        typer.echo(traj.model_dump_json(indent=2, exclude_none=True))
        raise typer.Exit(0)
    console = _table_console()
    summary = Table(title=f"trajectory {traj.session_id}", show_header=False)
    summary.add_column("field", no_wrap=True)
    summary.add_column("value", overflow="fold")
    agent = traj.agent.name + (f" ({traj.agent.model_name})" if traj.agent.model_name else "")
    for key, value in (
        ("session", traj.session_id), ("task", traj.task_id), ("behaviour", traj.behaviour), ("split", traj.split),
        ("agent", agent), ("origin", traj.origin), ("sandbox", traj.sandbox_id), ("status", traj.status),
        ("created", traj.created_at), ("finished", traj.finished_at), ("steps", len(traj.steps)),
        ("reward", traj.reward), ("passed", traj.passed), ("self_report_only", traj.self_report_only),
        ("final message", traj.final_message),
    ):
        summary.add_row(key, Text(_fmt_opt(value)))  # Text: stored content is never read as markup
    console.print(summary)
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
            steps.add_row(str(s.step_id), s.provenance, f"({s.source} message)", "", s.outcome, exit_code, Text(_short(s.message)))
            continue
        for c in s.tool_calls:
            res = next((r for r in results if r.source_call_id == c.tool_call_id), results[0] if len(s.tool_calls) == 1 and results else None)
            args = ", ".join(f"{k}={_short(v, 40)}" for k, v in c.arguments.items())
            steps.add_row(
                str(s.step_id), s.provenance, Text(c.function_name), Text(_short(args, 80)), s.outcome, exit_code,
                Text(_short((res.content or "") if res else "")),
            )
    console.print(steps)


@app.command("validate")
def validate_cmd(
    files: Annotated[list[Path], typer.Argument(help="JSONL or JSON files to validate.")],
    kind: Annotated[str | None, typer.Option("--kind", help="Force a kind instead of detecting it per row.")] = None,
    eval_file: Annotated[Path | None, typer.Option("--eval", help="Eval file: shared prompts are leakage.")] = None,
    max_errors: Annotated[int, typer.Option("--max-errors", min=1, help="Errors listed per file.")] = 50,
    max_length: Annotated[int | None, typer.Option("--max-length", min=1, help="Length limit (estimated tokens).")] = None,
    tokenizer: Annotated[str | None, typer.Option("--tokenizer", help="tokenizer.json for real token counts.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
) -> None:
    """Validate post-training data. Exit 0: valid; 1: errors found; 2: a file could not be read."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from agent_rl_sandbox.tools.datasets import KINDS, validate_files
    from agent_rl_sandbox.tools.errors import ActionError

    if kind is not None and kind not in KINDS:
        typer.echo(f"unknown kind {kind!r}; one of: {', '.join(KINDS)}", err=True)
        raise typer.Exit(2)
    err = Console(stderr=True)
    big = sum(f.stat().st_size for f in files if f.is_file()) > 32 * 1024 * 1024
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, disable=not big or as_json, transient=True) as bar:
        tasks: dict[str, int] = {}

        def progress(path: str, done: int, total: int) -> None:
            if path not in tasks:
                tasks[path] = bar.add_task(Path(path).name, total=total)
            bar.update(tasks[path], completed=done)

        try:
            reports = validate_files(
                files, kind=kind, eval_path=eval_file, max_errors=max_errors, max_length=max_length,
                tokenizer_path=tokenizer, progress=progress,
            )
        except ActionError as e:
            typer.echo(e.agent_text(), err=True)
            raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in reports], indent=2))
    else:
        for r in reports:
            typer.echo(r.text())
    raise typer.Exit(max((r.exit_code for r in reports), default=2))


def main() -> None:
    """Console entry: runs the CLI; an error the user can act on (unknown task, unreachable or
    malformed database URL) becomes one line on stderr and exit code 2, never a traceback."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from agent_rl_sandbox.tools.errors import ActionError

    try:
        app()
    except ActionError as e:
        typer.echo(f"error: {e.agent_text()}", err=True)
        sys.exit(2)
    except Exception as e:
        # SQLAlchemy's errors (bad URL, unreachable server); matched by module so that commands
        # which never touch the store do not pay for importing SQLAlchemy at start-up.
        if not type(e).__module__.startswith("sqlalchemy."):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        typer.echo(
            f"error: cannot open the store: {first}. Next step: check AGENT_RL_SANDBOX_DATABASE_URL "
            "(e.g. postgresql+psycopg://user@host/db) or unset it to use the SQLite file in AGENT_RL_SANDBOX_HOME",
            err=True,
        )
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``agent-rl-sandbox import FILE...``: import trajectories (ATIF, Claude Code, Codex, OpenAI chat).

Problems are listed with file and line. Exit statuses (the package's rule), the worst over all
files: 0 every file imported cleanly, 1 a file imported with errors, 2 a file could not be read or
its format could not be told (the other files are still imported).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, plural, settings
from agent_rl_sandbox.cli._outcome import Outcome, finish


def import_files(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE", help="Files to import (ATIF .json/.jsonl, Claude Code or Codex JSONL, chat logs)."
        ),
    ],
    fmt: Annotated[
        str | None,
        typer.Option("--format", metavar="FORMAT", help="atif, claude_code, codex or openai_chat (default: detected)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Import trajectories into the store; problems are listed with file and line. Exit 1 when a file
    has errors, 2 when a file cannot be read."""
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.errors import ActionError

    services = Services.build(settings(home, task_dir))
    reports, outcome = [], Outcome.OK
    # subagent transcripts (agent-<id>.jsonl) after the main ones, so they can link to their session
    paths = sorted(paths, key=lambda p: p.name.startswith("agent-") or p.parent.name == "subagents")
    try:
        for p in paths:
            try:
                r = services.trajectories.import_file(p, format=fmt)
            except ActionError as e:  # unreadable path, unknown or undetectable format
                text = e.agent_text()  # most name the file already: never twice
                typer.echo(f"error: {text}" if str(p) in text else f"error: {p}: {text}", err=True)
                outcome = max(outcome, Outcome.BAD_INPUT)
                continue
            reports.append(r)
            if not r.ok:
                outcome = max(outcome, Outcome.FAILED)
    finally:
        services.close()
    if as_json:
        typer.echo(json.dumps([r.model_dump() | {"ok": r.ok} for r in reports], indent=2))
    else:
        for r in reports:
            redacted = sum(r.redactions.values())
            k = len(r.subagents)
            subs = "" if not k else " (1 of them a subagent)" if k == 1 else f" ({k} of them subagents)"
            typer.echo(
                f"{r.file}: {r.format}, {plural(len(r.trajectories), 'trajectory')}{subs}, {plural(r.steps, 'step')}"
                f" ({len(r.already_imported)} already imported, {plural(r.missing_results, 'call')} without result,"
                f" {plural(redacted, 'secret')} redacted)"
            )
            side = {k: v for k, v in r.skipped.items() if k.startswith("sidechain")}
            if side:  # subagent work not imported is said, never dropped silently
                typer.echo("  subagent lines not imported: " + ", ".join(f"{k} {v}" for k, v in side.items()))
            for pr in r.problems:
                where = f"{pr.file}:{pr.line}" if pr.line else pr.file
                typer.echo(f"  {pr.severity}: {where}{' ' + pr.path if pr.path else ''}: {pr.message}")
    finish(outcome)

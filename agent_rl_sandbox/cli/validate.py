"""``agent-rl-sandbox validate FILE...``: validate post-training data (TRL, MiniMind, OpenAI chat).

Exit statuses (the package's rule): 0 every file valid, 1 errors found, 2 a file could not be read
or an option is wrong. Never imports SQLAlchemy or torch (start-up stays fast); a progress bar shows
on stderr for inputs over 32 MiB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._outcome import BadInput, Outcome, finish


def validate(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="JSONL or JSON files to validate.")],
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            metavar="KIND",
            help="Force a kind instead of detecting it per row: trl.preference, minimind.sft... or an export "
            "format name (sft, dpo, kto, grpo, minimind_sft, minimind_dpo, minimind_agentic, atif, suite).",
        ),
    ] = None,
    eval_file: Annotated[
        Path | None, typer.Option("--eval", metavar="FILE", help="Eval file: shared prompts are leakage.")
    ] = None,
    max_errors: Annotated[int, typer.Option("--max-errors", metavar="N", min=1, help="Errors listed per file.")] = 50,
    max_length: Annotated[
        int | None, typer.Option("--max-length", metavar="TOKENS", min=1, help="Length limit (estimated tokens).")
    ] = None,
    tokenizer: Annotated[
        str | None, typer.Option("--tokenizer", metavar="FILE", help="tokenizer.json for real token counts.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
) -> None:
    """Validate post-training data. Exit 0: valid; 1: errors found; 2: a file could not be read."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from agent_rl_sandbox.tools.datasets import canonical_kind, kinds_help, validate_files

    if kind is not None:
        real = canonical_kind(kind)
        if real is None:
            raise BadInput(f"unknown kind {kind!r}", f"use {kinds_help()}")
        kind = real
    err = Console(stderr=True)
    big = sum(f.stat().st_size for f in files if f.is_file()) > 32 * 1024 * 1024
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, disable=not big or as_json, transient=True) as bar:
        tasks: dict[str, int] = {}

        def progress(path: str, done: int, total: int) -> None:
            if path not in tasks:
                tasks[path] = bar.add_task(Path(path).name, total=total)
            bar.update(tasks[path], completed=done)

        # an ActionError (a file that cannot be read) reaches the root group: exit 2
        reports = validate_files(
            files,
            kind=kind,
            eval_path=eval_file,
            max_errors=max_errors,
            max_length=max_length,
            tokenizer_path=tokenizer,
            progress=progress,
        )
    if eval_file is not None and all(f.resolve() == eval_file.resolve() for f in files):
        typer.echo(
            f"note: {eval_file} is the --eval file itself, and no file is checked for leakage against "
            "itself. Next step: pass the training file(s) and --eval the held-out file",
            err=True,
        )
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in reports], indent=2))
    else:
        for r in reports:
            if not r.could_not_read:
                typer.echo(r.text())
    for r in reports:  # bad input: one ``error: ... Next step:`` line on stderr each (exit 2), as everywhere
        if r.could_not_read:
            typer.echo(
                f"error: could not read: {_named(r.path, r.could_not_read)}. Next step: check the path and pass a "
                "readable regular file (JSON Lines, or one JSON document for ATIF and suites)",
                err=True,
            )
    if not reports:
        finish(Outcome.BAD_INPUT)
    finish(max(Outcome(r.exit_code) for r in reports))


def _named(path: str | None, reason: str) -> str:
    """``reason``, led by ``path`` unless the reason already names it (no path said twice)."""
    return reason if path and path in reason else f"{path or '<rows>'}: {reason}"

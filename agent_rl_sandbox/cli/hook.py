"""``agent-rl-sandbox hook claude-code | codex | drain``: the commands agent clients' hooks call.

``claude-code`` and ``codex`` never break the client: they print nothing on stdout and always exit 0.
Run bare (as the shipped configs do) they never reach this module: :func:`agent_rl_sandbox.cli.main`
sends them to the lean path (:mod:`agent_rl_sandbox.agents.hooks`), which queues the event and
starts a background drainer. ``drain`` folds the queue into the store now and says what is left.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, group, settings
from agent_rl_sandbox.cli._outcome import verdict

app = group("Commands that agent clients' hooks call (and `drain`, which folds their queue into the store).")


@app.command("claude-code")
def claude_code() -> None:
    """Record one Claude Code hook event (JSON on stdin) as a `hook` step. Prints nothing; always exits 0."""
    from agent_rl_sandbox.agents._drain import fold_inline
    from agent_rl_sandbox.agents.hooks import hook_main

    raise typer.Exit(hook_main("claude-code", fold=fold_inline))


@app.command("codex")
def codex() -> None:
    """Record one Codex hook event (JSON on stdin) as a `hook` step. Prints nothing; always exits 0."""
    from agent_rl_sandbox.agents._drain import fold_inline
    from agent_rl_sandbox.agents.hooks import hook_main

    raise typer.Exit(hook_main("codex", fold=fold_inline))


@app.command("drain")
def drain(
    home: HomeOpt = None,
    wait: Annotated[
        float, typer.Option("--wait", metavar="SECONDS", help="How long to wait for a drainer that is running.")
    ] = 30.0,
) -> None:
    """Fold queued hook events into the store now, and finish hook sessions idle for
    AGENT_RL_SANDBOX_IDLE_SECONDS, and count the events in <home>/hooks/failed-events.jsonl (set aside by
    a drain, or hook input that was no JSON object). Exit 1 when events stay queued (the store could not
    be written: the reason is printed) or this drain set some aside."""
    from agent_rl_sandbox.agents._drain import drain as run_drain

    resolved = settings(home)
    report = run_drain(resolved, wait_s=wait)
    if report.locked_out:
        typer.echo(f"another drainer is still running after {wait:g} s; try again", err=True)
        verdict(False)
    for p in report.problems:
        typer.echo(p, err=True)
    typer.echo(
        f"folded {report.folded} event(s); set aside {report.failed}; still queued {report.left}"
        + (f"; finished {report.finished_idle} idle session(s)" if report.finished_idle else "")
    )
    if report.held:
        from agent_rl_sandbox.agents.hooks import FAILED_EVENTS, hooks_dir

        typer.echo(
            f"{hooks_dir(resolved.home) / FAILED_EVENTS} holds {report.held} event(s) that could not be recorded "
            "(each with its reason; hook input that was no JSON object is kept raw, base64)"
        )
    verdict(report.left == 0 and report.failed == 0 and not any(p.startswith("drain stopped") for p in report.problems))

"""``agent-rl-sandbox hook ...``: the commands agent clients' hooks call.

A hook must never break the client: these commands print nothing and always exit 0 (events that
cannot be stored now are queued; see :mod:`agent_rl_sandbox.agents.claude_code.hook`).
"""

from __future__ import annotations

import typer

from agent_rl_sandbox.cli._common import group

app = group("Commands that agent clients' hooks call.")


@app.command("claude-code")
def claude_code() -> None:
    """Record one Claude Code hook event (JSON on stdin) as a `hook` step. Prints nothing; always exits 0."""
    from agent_rl_sandbox.agents.claude_code.hook import main as hook_main

    raise typer.Exit(hook_main())

"""``agent-rl-sandbox demo``: play a good and a careless scripted agent over stdio and score them.

Exit 0 when the scores come out as they should (the good agent passes with reward 1, the careless
one fails and is flagged self-report-only), 1 otherwise, 2 for an unknown task.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, settings
from agent_rl_sandbox.cli._outcome import verdict


def demo(
    home: HomeOpt = None,
    task_id: Annotated[str, typer.Option("--task", metavar="TASK_ID", help="Task to play.")] = "claim-before-edit",
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Start the server over stdio, play a good and a careless scripted agent, print their scores."""
    import anyio

    from agent_rl_sandbox.agents.demo import render_demo, run_demo

    resolved = settings(home)
    results = anyio.run(run_demo, resolved, task_id)
    if as_json:
        typer.echo(json.dumps([r.__dict__ for r in results], indent=2, default=str))
    else:
        render_demo(results, resolved)
    good, careless = results
    verdict(good.passed and good.reward == 1.0 and not careless.passed and careless.self_report_only)

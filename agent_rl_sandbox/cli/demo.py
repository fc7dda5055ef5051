"""``agent-rl-sandbox demo``: play a good and a careless scripted agent over stdio and score them.

Exit 0 when the scores come out as they should (the good agent passes with reward 1, the careless
one fails and is flagged self-report-only), 1 otherwise, 2 for an unknown task.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, settings, table_console
from agent_rl_sandbox.cli._outcome import verdict


def demo(
    home: HomeOpt = None,
    task_id: Annotated[str, typer.Option("--task", metavar="TASK_ID", help="Task to play.")] = "claim-before-edit",
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    train: Annotated[
        bool, typer.Option("--train", help="The whole loop: collect, export, route, request, approve, train, gate.")
    ] = False,
    sft_steps: Annotated[int, typer.Option("--sft-steps", help="SFT (warm-up) steps of the --train job.")] = 300,
    grpo_steps: Annotated[
        int, typer.Option("--grpo-steps", help="Agentic GRPO steps after the SFT warm-up (0: an SFT job).")
    ] = 4,
    lr: Annotated[float, typer.Option("--lr", help="SFT learning rate of the --train job (GRPO: a hundredth).")] = 1e-2,
) -> None:
    """Start the server over stdio, play a good and a careless scripted agent, print their scores.
        With --train, run the whole training loop on the tiny local model (README: "The local policy agent
    and agentic GRPO")."""
    import anyio

    if train:
        from rich.console import Console

        from agent_rl_sandbox.cli._train_demo import run_train_demo

        figures = run_train_demo(settings(home), Console(width=140), sft_steps=sft_steps, grpo_steps=grpo_steps, lr=lr)
        verdict(figures.get("state") == "gate_passed")
        return

    from agent_rl_sandbox.agents.demo import render_demo, run_demo

    resolved = settings(home)
    from agent_rl_sandbox.services import ensure_home

    ensure_home(resolved)  # before the server starts: a home that cannot be made is one error line (exit 2)
    results = anyio.run(run_demo, resolved, task_id)
    if as_json:
        typer.echo(json.dumps([r.__dict__ for r in results], indent=2, default=str))
    else:
        render_demo(results, resolved, table_console())
    good, careless = results
    verdict(good.passed and good.reward == 1.0 and not careless.passed and careless.self_report_only)

"""``agent-rl-sandbox route``: the training-route recommendation (``tools.routes``) as a table or JSON.

Exit statuses (the package's rule): 0 a recommendation was made (whether or not it says to train
now); 2 bad input (an unknown behaviour or task, a negative count, a model size without a unit, a GPU
name it does not know without --gpu-memory-gb).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, settings, table_console
from agent_rl_sandbox.cli._outcome import BadInput

_OPTION_OF = {
    "signals.gpu_memory_gb": "--gpu-memory-gb",
    "signals.gpu": "--gpu",
    "signals.base_model_params": "--params",
    "gpu_memory_gb, CLI --gpu-memory-gb": "--gpu-memory-gb",
}
"""The MCP tool's signal names in a RouteInputError, as this command's options."""

_ADVICE_OF = {"pass base_model_params": "pass --params"}
"""Advice in a recommendation's reasons that names an MCP signal field, as this command's option."""


def _cli_words(text: str) -> str:
    """A reason's text with the MCP field names it advises passing replaced by this command's flags."""
    for field, option in _ADVICE_OF.items():
        text = text.replace(field, option)
    return text


def route(
    behaviour: Annotated[
        str | None,
        typer.Option(
            "--behaviour", "--behavior", metavar="NAME", help="Derive the evidence from this behaviour's trajectories."
        ),
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", metavar="TASK_ID", help="Derive it from one task variant.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="NAME", help="Count only this agent's trajectories.")
    ] = None,
    base_model: Annotated[
        str | None,
        typer.Option(
            "--base-model",
            metavar="MODEL",
            help="Model to adapt (copied into the job spec); a local folder's size is read from its "
            "safetensors headers or config.json.",
        ),
    ] = None,
    params: Annotated[
        str | None, typer.Option("--params", metavar="SIZE", help="Base model size with a unit: 7B, 350M.")
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            metavar="TYPE",
            help="GPU type: H200, H100, A100, A100-40GB, L40S, A10G, L4, RTX4090, T4, or none/cpu; another name "
            "only with --gpu-memory-gb.",
        ),
    ] = None,
    gpu_memory_gb: Annotated[
        float | None, typer.Option("--gpu-memory-gb", metavar="GB", help="Memory of one GPU.")
    ] = None,
    context_length: Annotated[
        int | None, typer.Option("--context-length", metavar="TOKENS", help="Training sequence length.")
    ] = None,
    demonstrations: Annotated[
        int | None, typer.Option("--demonstrations", metavar="N", help="Passing demonstrations available.")
    ] = None,
    pairs: Annotated[int | None, typer.Option("--pairs", metavar="N", help="Preference pairs available.")] = None,
    teacher: Annotated[
        str | None, typer.Option("--teacher", metavar="MODEL", help="A teacher model to distil from.")
    ] = None,
    fixed_rule: Annotated[
        bool | None,
        typer.Option("--fixed-rule/--not-fixed-rule", help="The behaviour is the same action in every state."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the recommendation as JSON.")] = False,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Recommend how to teach a behaviour: rule, prompt, SFT, DPO/KTO, GRPO or agentic GRPO; the adapter; why."""
    from pydantic import ValidationError

    from agent_rl_sandbox.schemas.routes import RouteRecommendInput, RouteSignals
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.routes import RouteInputError

    try:
        signals = RouteSignals(
            base_model_params=params,
            gpu=gpu,
            gpu_memory_gb=gpu_memory_gb,
            context_length=context_length,
            demonstrations=demonstrations,
            preference_pairs=pairs,
            teacher_model=teacher,
            fixed_rule=fixed_rule,
        )
    except ValidationError as e:
        first = e.errors()[0]
        raise BadInput(
            f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}", "fix the option and run again"
        ) from None
    inp = RouteRecommendInput(
        behaviour=behaviour, task_id=task, agent_name=agent, base_model=base_model, signals=signals
    )
    services = Services.build(settings(home, task_dir))
    try:
        # a local --base-model folder gives the size (safetensors headers / config.json) unless --params does;
        # a RouteInputError reaches the root group: exit 2
        rec = services.routes.recommend(inp, read_local_model=True)
    except RouteInputError as e:  # named by this command's options, not the MCP tool's signal fields
        text, hint = e.message, e.hint or "fix the option and run again"
        for field, option in _OPTION_OF.items():
            text, hint = text.replace(field, option), hint.replace(field, option)
        raise BadInput(text, hint) from None
    finally:
        services.close()
    if as_json:
        typer.echo(rec.model_dump_json(indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    console = table_console()
    head = f"{rec.intervention}" + (f" ({rec.trainer}, {rec.adapter})" if rec.trainer else "")
    console.print(Text(f"route: {head}; train now: {'yes' if rec.train_now else 'no'}"))
    size = rec.signals.get("base_model_params")
    if size is not None and size.source == "model_folder" and base_model:
        from agent_rl_sandbox.tools.routes import local_model_signals

        local = local_model_signals(Path(base_model).expanduser())
        console.print(Text(f"model size: {size.value} parameters ({local.source if local else base_model})"))
    table = Table("rule", "why", "signal", "value", "source", title="reasons")
    for r in rec.reasons:
        table.add_row(
            r.rule, Text(_cli_words(r.text)), r.signal, Text(json.dumps(r.value, default=str)), Text(r.source)
        )
    console.print(table)
    for m in rec.prerequisites_missing:
        console.print(Text(f"missing: {m}"))
    for a in rec.alternatives:
        console.print(Text(f"alternative {a.rank}: {a.intervention} ({a.why})"))
    if rec.hyperparameters:
        console.print(Text("hyperparameters: " + json.dumps(rec.hyperparameters)))
    if rec.memory:
        mem = Table("method", "trainable params", "total GiB", "fits", title="memory estimate")
        for row in rec.memory:
            mem.add_row(
                row.method, f"{row.trainable_params:,}", f"{row.total_gib}", "-" if row.fits is None else str(row.fits)
            )
        console.print(mem)

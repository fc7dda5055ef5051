"""The root typer app: one command or group per module (see :mod:`agent_rl_sandbox.cli`)."""

from __future__ import annotations

from typing import Annotated

import typer

from agent_rl_sandbox.cli import (
    adapters,
    config,
    demo,
    export,
    hook,
    identities,
    import_,
    jobs,
    model,
    route,
    score,
    serve,
    tasks,
    trajectories,
    ui,
    validate,
    worker,
)
from agent_rl_sandbox.cli._common import App, RootGroup
from agent_rl_sandbox.cli._outcome import BadInput

app = App(
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=False,
    help="Sandboxes, trajectories and rewards for coding agents.",
)


def _print_version(value: bool) -> None:
    """``--version``: the installed package's version (its metadata), then exit 0."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"agent-rl-sandbox {version('agent-rl-sandbox')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            raise BadInput(
                "agent-rl-sandbox has no package metadata (not installed)", "pip install -e . in the checkout"
            ) from None
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Sandboxes, trajectories and rewards for coding agents."""


app.command("serve")(serve.serve)
app.command("demo")(demo.demo)
app.add_typer(tasks.app, name="tasks")
app.command("score")(score.score)
app.add_typer(hook.app, name="hook")
app.add_typer(config.app, name="config")
app.command("import")(import_.import_files)
app.command("export")(export.export)
app.add_typer(trajectories.app, name="trajectories")
app.command("validate")(validate.validate)
app.command("route")(route.route)
app.add_typer(jobs.app, name="jobs")
app.command("worker")(worker.worker)
app.add_typer(adapters.app, name="adapters")
app.add_typer(model.app, name="model")
app.command("ui")(ui.ui)
app.add_typer(identities.app, name="identities")

"""The human's entry point: ``agent-rl-sandbox serve | demo | tasks | trajectories | score | validate
| import | export | hook | route | jobs | worker | adapters | model | ui | identities``.

One module per command group; this file only builds the root app and adds one command or group
per module (the style of Inspect AI's ``_cli/main.py``)::

    serve.py         serve [--http]             the MCP server over stdio, or streamable HTTP
    demo.py          demo                       a good and a careless scripted agent, scored
    tasks.py         tasks list|show|check      the task registry and its direction test
    trajectories.py  trajectories list|show     what the store holds
    score.py         score                      scoring and eval gates (tools.evals.score_and_gate)
    validate.py      validate                   post-training data validation
    import_.py       import                     trajectories in from ATIF, Claude Code, Codex, chat logs
    export.py        export                     training data (or ATIF / a suite) out, with a manifest
    hook.py          hook claude-code           what agent clients' hooks call (always exit 0)
    route.py         route                      the training-route recommendation (tools.routes)
    jobs.py          jobs list|show|approve|reject|cancel   training jobs: the human's decisions
    worker.py        worker [--once] [--max-jobs N]  claims approved jobs and runs their stages
    adapters.py      adapters list|show|deploy|rollback|enable|disable   the registry; the kill switch
    model.py         model init-tiny            the tiny no-hub model (needs the train extra)
    ui.py            ui [--host H] [--port N]   the local web page (agent_rl_sandbox.web): approvals, trajectories, gates
    identities.py    identities add|list|revoke  bearer tokens of the HTTP server
    _outcome.py      the exit-code rule         _common.py  shared options, settings, help metavars

Exit statuses, the same rule for every command (applied in ``_outcome``; commands never pick a
number themselves):

- **0**: done, and every verdict passed.
- **1**: the input was fine and the verdict is no: a gate failed, validation found errors, a task
  check failed, a task folder failed to load, a file imported with errors, an export was refused
  or its file failed validation, the demo's scores came out wrong.
- **2**: bad input, nothing was judged: an unknown task, trajectory or gate, an unreadable or
  invalid file, nothing to score, an unknown option value, an invalid ``AGENT_RL_SANDBOX_*``
  setting, an unreachable or malformed store URL. The reason is one ``error: ...`` line on stderr
  ending in a next step, never a traceback.

``hook`` commands are the exception: they always exit 0, so a hook never breaks its client.

Start-up stays light: commands import their heavy modules (the store and SQLAlchemy, the server,
rich tables) inside the command, so ``--help`` and ``validate`` never import SQLAlchemy or torch,
and ``serve`` claims stdout before any tool code is imported.
"""

from __future__ import annotations

import os

from agent_rl_sandbox.cli import (
    adapters,
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

app = App(
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=False,
    help="Sandboxes, trajectories and rewards for coding agents.",
)
app.command("serve")(serve.serve)
app.command("demo")(demo.demo)
app.add_typer(tasks.app, name="tasks")
app.command("score")(score.score)
app.add_typer(hook.app, name="hook")
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

__all__ = ["app", "main"]


def main() -> None:
    """Console entry (``agent-rl-sandbox``): runs :data:`app`; exit statuses as in the module docstring."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    app()

"""The human's entry point: ``agent-rl-sandbox serve | demo | tasks | trajectories | score | validate
| import | export | hook | config | route | jobs | worker | adapters | model | ui | identities``.

One module per command group; ``_app.py`` only builds the root app and adds one command or group
per module (the style of Inspect AI's ``_cli/main.py``)::

    serve.py         serve [--http]             the MCP server over stdio, or streamable HTTP
    demo.py          demo                       a good and a careless scripted agent, scored
    tasks.py         tasks list|show|check      the task registry and its direction test
    trajectories.py  trajectories list|show     what the store holds
    score.py         score                      scoring and eval gates (tools.evals.score_and_gate)
    validate.py      validate                   post-training data validation
    import_.py       import                     trajectories in from ATIF, Claude Code, Codex, chat logs
    export.py        export                     training data (or ATIF / a suite) out, with a manifest
    hook.py          hook claude-code|codex|drain  what agent clients' hooks call (always exit 0)
    config.py        config claude-code|codex   ready-to-paste client configs (absolute paths, settings)
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

Start-up stays light: ``agent-rl-sandbox hook claude-code|codex`` never imports typer, rich, pydantic or
SQLAlchemy (:func:`main` dispatches it before the app is built; the event is queued and folded into
the store by a background drainer, :mod:`agent_rl_sandbox.agents.hooks`). Other commands import their heavy modules (the store and SQLAlchemy, the server,
rich tables) inside the command, so ``--help`` and ``validate`` never import SQLAlchemy or torch,
and ``serve`` claims stdout before any tool code is imported. ``serve`` over stdio answers
``initialize`` and ``tools/list`` before importing typer, rich, SQLAlchemy or any tool code (the
store and the tools are built on the first tool call: :mod:`agent_rl_sandbox.server.lazy`).
"""

from __future__ import annotations

import os
import sys

__all__ = ["app", "main"]

_FAST_HOOKS = ("claude-code", "codex")


def __getattr__(name: str) -> object:
    if name == "app":  # built on first use, so the hook fast path never imports typer
        from agent_rl_sandbox.cli._app import app

        return app
    raise AttributeError(name)


def _fold_inline() -> list[str]:
    from agent_rl_sandbox.agents._drain import fold_inline

    return fold_inline()


def main() -> None:
    """Console entry (``agent-rl-sandbox``): runs the app; exit statuses as in the module docstring.

    ``hook claude-code|codex`` with no further arguments takes the lean path
    (:func:`agent_rl_sandbox.agents.hooks.hook_main`: stdlib only, about the cost of starting Python).
    ``score FILE --json`` (with ``--out``, ``--gate``, ``--home``, ``--task-dir``) first tries the lean
    path of :mod:`agent_rl_sandbox.cli._lean_score` (no typer, rich or SQLAlchemy; the same bytes and
    exit status); anything it does not handle, errors included, runs through the app as before.
    ``serve`` over stdio (bare, ``--home``, ``--task-dir``) likewise skips the app
    (:mod:`agent_rl_sandbox.cli._lean_serve`: the same server, settings errors left to the app)."""
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "hook" and args[1] in _FAST_HOOKS:
        from agent_rl_sandbox.agents.hooks import hook_main

        raise SystemExit(hook_main(args[1], fold=_fold_inline))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args[:1] == ["score"]:
        from agent_rl_sandbox.cli._lean_score import run_lean

        run_lean(args[1:])  # exits when it handled the command
    if args[:1] == ["serve"]:
        from agent_rl_sandbox.cli._lean_serve import run_lean as run_lean_serve

        run_lean_serve(args[1:])  # serves and exits when it handled the command
    from agent_rl_sandbox.cli._app import app

    app()

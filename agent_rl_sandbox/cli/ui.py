"""``agent-rl-sandbox ui [--host 127.0.0.1] [--port 8766]``: the local web page where humans approve
training jobs, read trajectories, look at eval gates and pull unhooks.

Prints a ready-to-open URL carrying a random access token (or ``AGENT_RL_SANDBOX_UI_TOKEN`` when
set); the browser keeps it as a cookie after the first visit. Binding beyond loopback is refused
unless ``--allow-remote`` is given and the token is configured. Decisions are recorded under
``AGENT_RL_SANDBOX_APPROVER`` or the OS user, as with the ``jobs`` CLI. Runs until interrupted.

Exit statuses (the package's rule): 0 after Ctrl-C; 2 for a refused bind (beyond loopback without
the flag or a configured token, an address in use).
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, settings
from agent_rl_sandbox.cli._outcome import BadInput

UI_PORT = 8766
"""``ui``'s default port: one above ``serve --http``'s 8765, so both run side by side with their defaults."""


def ui(
    host: Annotated[
        str, typer.Option("--host", metavar="ADDR", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="N", min=0, max=65535, help="Port (0: any free port; `serve --http` defaults to 8765)."
        ),
    ] = UI_PORT,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow binding beyond loopback (needs AGENT_RL_SANDBOX_UI_TOKEN).")
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", metavar="NAME:PORT", help="Another Host header to accept (repeatable)."),
    ] = None,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Serve the approval page (queue, jobs, adapters, trajectories, evals) until interrupted."""
    from agent_rl_sandbox.cli.jobs import _who
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.web import WebConfig, bind, create_app, server

    s = settings(home, task_dir)
    try:
        sock = bind(host, port) if _bind_allowed(host, allow_remote, s.ui_token) else None
    except OSError as e:
        raise BadInput(
            f"cannot bind {host}:{port}: {e.strerror or e} (another `ui`, a `serve --http --port {port}` or another "
            "program listens there)",
            "stop it or pass another --port (0 picks a free one)",
        ) from None
    services = Services.build(s)
    try:
        token = {"token": s.ui_token, "token_configured": True} if s.ui_token else {}
        try:
            config = WebConfig(
                host=host, port=sock.getsockname()[1] if sock else port, allow_remote=allow_remote,
                extra_hosts=tuple(allowed_host or ()), approver=_who(services.jobs), **token,
            )  # fmt: skip
        except ValueError as e:
            raise BadInput(str(e), "see `agent-rl-sandbox ui --help`") from None
        assert sock is not None
        services.close_at_exit()
        typer.echo(f"agent-rl-sandbox ui: open {config.url}")
        typer.echo(f"(decisions are recorded as {config.approver}; Ctrl-C stops it)")
        server(create_app(services, config)).run(sockets=[sock])
    finally:
        services.close()


def _bind_allowed(host: str, allow_remote: bool, token: str | None) -> bool:
    """Whether to bind at all: loopback always; beyond it only with the flag and a configured token
    (otherwise :class:`WebConfig` refuses and says why, before any socket is opened)."""
    from agent_rl_sandbox.web._security import is_loopback

    return is_loopback(host) or (allow_remote and bool(token))

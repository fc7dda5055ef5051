"""``agent-rl-sandbox serve``: the MCP server over stdio (what Claude Code and Codex launch), or with
``--http`` over streamable HTTP for a team (bearer tokens from ``identities add``).

Settings are read before stdout is claimed (a bad setting is one ``error:`` line, exit 2); the
server and its tools are imported only after, so nothing they print can reach the wire. Under
stdio the server is a :class:`~agent_rl_sandbox.server.lazy.LazyServer` (tools listed at once, the
store and tools built on the first tool call), and the plain forms of the command (``serve``,
``--home``, ``--task-dir``) skip building this typer app (:mod:`agent_rl_sandbox.cli._lean_serve`).
Under ``--http`` stdout is not the wire; uvicorn logs to stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, settings
from agent_rl_sandbox.cli._outcome import BadInput

HTTP_PORT = 8765
"""``serve --http``'s default port (``ui``'s is :data:`agent_rl_sandbox.cli.ui.UI_PORT`, 8766, so both
run side by side with their defaults)."""


def _check_port_free(host: str, port: int) -> None:
    """Refuse, before the store is opened, a ``host:port`` something already listens on: one
    ``error:`` line naming it (uvicorn would log a traceback-like error and exit 1). Binds and closes
    a probe socket with ``SO_REUSEADDR``, as uvicorn binds (a port in ``TIME_WAIT`` is free)."""
    import socket

    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as e:
            raise BadInput(
                f"cannot bind {host}:{port}: {e.strerror or e} (another `serve --http`, a `ui --port {port}` or "
                "another program listens there)",
                "stop it or pass another --port (0 picks a free one)",
            ) from None


def serve(
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP (bearer tokens) instead of stdio.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="HTTP: address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", metavar="PORT", help="HTTP: port to bind (the approval page `ui` defaults to 8766)."),
    ] = HTTP_PORT,
    workers: Annotated[int, typer.Option("--workers", metavar="N", help="HTTP: server processes on the socket.")] = 1,
) -> None:
    """Run the MCP server over stdio (what Claude Code and Codex launch), or over HTTP with --http."""
    resolved = settings(home, task_dir)
    if http:
        if workers < 1 or not 0 <= port <= 65535:
            raise BadInput(f"bad --workers {workers} or --port {port}", "give --workers >= 1 and a port 0-65535")
        if port != 0:
            _check_port_free(host, port)
        from agent_rl_sandbox.server.http import serve_http

        typer.echo(f"agent-rl-sandbox: MCP over HTTP at http://{host}:{port}/mcp (health: /healthz)", err=True)
        serve_http(resolved, host=host, port=port, workers=workers)
        return
    from agent_rl_sandbox.cli._lean_serve import serve_stdio_lazy

    serve_stdio_lazy(resolved)

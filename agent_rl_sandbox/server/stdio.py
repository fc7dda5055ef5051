"""Serving over stdio with stdout reserved for protocol messages.

Under stdio, stdout *is* the wire: one stray ``print`` (or a child process writing to fd 1) breaks
every client at its next read. :func:`claim_stdout` therefore runs before any tool code is
imported: it moves the real stdout to a private descriptor for the transport, points fd 1 at
stderr, and sends Python-level ``print`` and ``logging`` to stderr too.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def claim_stdout() -> int:
    """Reserve the process's stdout for the MCP wire; returns the private fd that now holds it.

    Afterwards fd 1 is a duplicate of stderr (children and C code writing to fd 1 land on
    stderr), ``sys.stdout`` is ``sys.stderr``, and logging writes to stderr.
    """
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("AGENT_RL_SANDBOX_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    return wire_fd


def serve_stdio(build: Callable[[], Any] | None = None) -> None:
    """Run the MCP server over stdio until stdin closes.

    ``build`` returns the ``MCPServer`` (default: :func:`agent_rl_sandbox.server.app.build_server`
    with settings from the environment; ``agent-rl-sandbox serve`` passes a
    :class:`~agent_rl_sandbox.server.lazy.LazyServer`). It is called only after stdout is claimed, so
    nothing a tool module prints at import or call time can reach the wire.
    """
    wire_fd = claim_stdout()
    import anyio
    from mcp.server.stdio import stdio_server

    if build is None:
        from agent_rl_sandbox.server.app import build_server as build
    server = build()
    # this process is ours: close sandboxes on exit and on SIGTERM/SIGHUP (a LazyServer does it for
    # the services it builds on first use)
    owner = server if hasattr(server, "close_at_exit") else getattr(server, "services", None)
    if owner is not None:
        owner.close_at_exit()

    # SIGTERM/SIGHUP while the loop runs: a SystemExit raised by a Python-level handler in the
    # middle of anyio's task groups can leave anyio re-delivering cancellation forever (seen in CI:
    # serve hung after SIGTERM under load). So the loop takes the signals itself, cancels the server
    # cleanly, and the SystemExit (which runs the atexit close) is raised after the loop has ended.
    # The signals are blocked until the loop's handlers are in place, so none falls in between.
    term = (signal.SIGTERM, signal.SIGHUP)
    received: list[int] = []

    async def main() -> None:
        stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_fd, "wb"), encoding="utf-8"))
        low = server._lowlevel_server
        async with anyio.create_task_group() as tg:
            await tg.start(_cancel_on_signals, term, tg.cancel_scope, received)
            async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
                await low.run(read_stream, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()  # stdin closed: stop the signal watcher too

    signal.pthread_sigmask(signal.SIG_BLOCK, term)
    try:
        anyio.run(main)
    finally:
        if owner is not None:  # the loop's handlers are gone: SIGTERM/SIGHUP exit through SystemExit again
            from agent_rl_sandbox.services import exit_on_term_signals

            exit_on_term_signals()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, term)
    if received:
        raise SystemExit(128 + received[0])


async def _cancel_on_signals(
    signals: tuple[signal.Signals, ...],
    scope: Any,
    received: list[int],
    *,
    task_status: Any,
) -> None:
    """Take ``signals`` in the event loop (then unblock them), and on the first: note it in
    ``received`` and cancel ``scope`` (the task group around the server)."""
    import anyio

    with anyio.open_signal_receiver(*signals) as arrivals:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
        task_status.started()
        async for signum in arrivals:
            received.append(int(signum))
            scope.cancel()
            return

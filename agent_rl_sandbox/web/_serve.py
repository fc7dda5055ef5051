"""Serving the page with uvicorn on a socket bound first, so port 0 (any free port) works and the
printed URL and the Host check name the port actually bound."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: a free port). Raises ``OSError`` when the
    address is in use or cannot be bound."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def server(app: ASGIApp, log_level: str = "warning") -> uvicorn.Server:
    """A uvicorn server for ``app`` (no proxy headers trusted, no server header); run it with
    ``server.run(sockets=[sock])`` and stop it with ``server.should_exit = True``."""
    return uvicorn.Server(
        uvicorn.Config(
            app, log_level=log_level, proxy_headers=False, server_header=False, date_header=False,
            lifespan="off", access_log=False,
        )
    )  # fmt: skip

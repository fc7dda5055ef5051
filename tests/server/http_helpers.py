"""A real HTTP server for tests: :func:`build_http_app` under uvicorn in a thread on a free loopback
port, and SDK clients that carry a bearer token."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_rl_sandbox.server.http import build_http_app
from agent_rl_sandbox.services import Services

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextlib.contextmanager
def running_server(services: Services) -> Iterator[str]:
    """Serve ``services`` over HTTP on 127.0.0.1 (a free port); yields the base URL. The app's
    lifespan closes ``services`` on the way out."""
    server = uvicorn.Server(
        uvicorn.Config(build_http_app(services=services), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test HTTP server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.asynccontextmanager
async def client(base: str, token: str | None) -> AsyncIterator[Client]:
    """An SDK client of ``base``/mcp sending ``token`` as its bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as c:
            yield c

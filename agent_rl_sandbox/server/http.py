"""Serving over streamable HTTP: the MCP SDK's app under uvicorn, bearer-token identities, quotas.

``agent-rl-sandbox serve --http [--host 127.0.0.1] [--port 8765] [--workers N]`` runs
:func:`serve_http`. What a request meets, outside in:

1. **Size limit**: a body over ``Settings.http_max_request_bytes`` gets 413 before it is parsed.
2. **DNS-rebinding protection** (the SDK's ``TransportSecuritySettings``), always on: the ``Host``
   header must be loopback (``127.0.0.1``, ``localhost``, ``[::1]``, any port) or one of
   ``Settings.http_allowed_hosts`` (a real hostname behind a proxy), else 421; a browser ``Origin``
   must be loopback or one of ``Settings.http_allowed_origins``, else 403.
3. **Bearer token** (``Authorization: Bearer ars_...``), checked by :class:`IdentityVerifier` through
   the SDK's ``TokenVerifier`` on every request (one indexed read; nothing cached, so a revoked token
   is refused at its next request by every process): missing, unknown or revoked gets 401.
4. **The tools** of :mod:`agent_rl_sandbox.server.app`, each call acting for the token's identity
   (:func:`token_caller` fills ``Caller.owner_id`` with the identity id and ``Caller.peers`` with its
   team mates), wrapped in the identity's quotas (:func:`quota_admit`).

``GET /healthz`` needs no token and answers only ``{"status": "ok"}`` (200) or
``{"status": "unavailable"}`` (503, the database cannot be reached): no version, no counts, no names.

Stateless transport: every HTTP request stands alone (no ``mcp-session-id`` table in memory), so any
server process behind any load balancer can answer any request, and identity comes from the token,
never from a session. Several processes (``--workers``, or servers on other machines) share one
PostgreSQL database; each opens its own pool. A sandbox's working copy lives on the disk of the
machine that created it: pin an identity to one machine (see the README's deployment section), or
share the home folder. This module installs no signal handler or ``atexit`` hook: uvicorn owns the
process, and the app's lifespan closes the services (killing live sandbox commands) when it stops.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from agent_rl_sandbox.server.app import Admit, ToolSpec, build_server
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools.identities import IdentityRegistry, QuotaLimits, Quotas

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
KEEP_ALIVE_S = 75
"""Seconds uvicorn keeps an idle connection open (its default, 5 s, races clients that reuse one)."""
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

_FACTORY_SETTINGS = "AGENT_RL_SANDBOX_HTTP_SETTINGS_JSON"
"""Where :func:`serve_http` hands its settings to worker processes (uvicorn ``--workers``)."""


class IdentityVerifier(TokenVerifier):
    """The SDK's token verifier over the store's identities: a token names an active identity, or
    the request gets 401. The ``AccessToken`` carries the identity id as ``client_id``, its teams as
    ``team:<name>`` scopes (plus ``agent``), and its team peers' ids in ``claims["peers"]``."""

    def __init__(self, registry: IdentityRegistry):
        self.registry = registry

    async def verify_token(self, token: str) -> AccessToken | None:
        found = await anyio.to_thread.run_sync(self.registry.verify, token)
        if found is None:
            return None
        rec, caller = found
        return AccessToken(
            token=token,
            client_id=rec.identity_id,
            scopes=["agent", *(f"team:{t}" for t in rec.teams)],
            subject=rec.name,
            claims={"peers": sorted(caller.peers)},
        )


def token_caller(ctx: Context) -> Caller:
    """The :class:`Caller` of the request ``ctx`` serves: the identity of its verified bearer token.
    Raises ``RuntimeError`` when there is none (the auth middleware did not run: fail closed rather
    than act for nobody)."""
    tok = get_access_token()
    if tok is None:
        raise RuntimeError("no verified bearer token on this request: serve the app built by build_http_app")
    peers = (tok.claims or {}).get("peers") or ()
    return Caller.agent(tok.client_id, peers=frozenset(peers))


def quota_limits(settings: Settings) -> QuotaLimits:
    """The per-identity limits of ``settings``."""
    return QuotaLimits(
        open_sandboxes=settings.quota_open_sandboxes,
        running_commands=settings.quota_running_commands,
        pending_training=settings.quota_pending_training,
        steps_per_minute=settings.quota_steps_per_minute,
        idle_seconds=settings.sandbox_idle_seconds,
        max_exec_seconds=settings.max_exec_seconds,
        job_expiry_hours=settings.job_expiry_hours,
    )


def quota_admit(quotas: Quotas) -> Admit:
    """The ``admit`` hook that applies ``quotas`` to the tools they limit: a new sandbox
    (``sandbox_reset`` without a ``sandbox_id``), ``sandbox_exec``, ``training_request`` and the steps
    of ``trajectory_log_step``. Other tools pass."""

    @contextmanager
    def admit(spec: ToolSpec, caller: Caller, inp: BaseModel) -> Iterator[None]:
        if spec.name == "sandbox_reset" and getattr(inp, "sandbox_id", None) is None:
            with quotas.open_sandbox(caller):
                yield
        elif spec.name == "sandbox_exec":
            with quotas.running_command(caller):
                yield
        elif spec.name == "training_request":
            with quotas.training_request(caller):
                yield
        elif spec.name == "trajectory_log_step":
            quotas.steps(caller, len(getattr(inp, "steps", None) or ()) + (getattr(inp, "step", None) is not None))
            yield
        else:
            yield

    return admit


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """DNS-rebinding protection: loopback plus the configured hosts and origins."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*LOOPBACK_HOSTS, *settings.http_allowed_hosts],
        allowed_origins=[*LOOPBACK_ORIGINS, *settings.http_allowed_origins],
    )


def build_http_app(settings: Settings | None = None, services: Services | None = None) -> Starlette:
    """The ASGI app: the MCP endpoint at ``/mcp`` (token required) and ``/healthz`` (no token).
    Its lifespan runs the SDK's session manager and closes ``services`` when the app stops (also
    when they were passed in)."""
    services = services or Services.build(settings)
    settings = services.settings
    registry = IdentityRegistry(services.store.engine)
    quotas = Quotas(quota_limits(settings), services.store.engine)
    server = build_server(
        settings,
        services,
        caller_of=token_caller,
        admit=quota_admit(quotas),
        token_verifier=IdentityVerifier(registry),
        # the SDK needs an issuer URL; this server issues tokens out of band (`identities add`), so
        # it points at itself and no OAuth metadata is published (resource_server_url=None)
        auth=AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None, required_scopes=["agent"]),
    )
    engine = services.store.engine

    @server.custom_route(HEALTH_PATH, methods=["GET"])
    async def health(_request: Request) -> JSONResponse:
        def ping() -> None:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        try:
            await anyio.to_thread.run_sync(ping)
        except Exception:  # noqa: BLE001 - any failure means "not ready"; the log has it
            log.warning("health check: database unreachable", exc_info=True)
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ok"})

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        max_request_body_size=settings.http_max_request_bytes,
        transport_security=transport_security(settings),
    )
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[None]:
        try:
            async with inner(a):
                yield
        finally:
            await anyio.to_thread.run_sync(services.close)

    app.router.lifespan_context = lifespan
    app.state.services = services  # for tests
    app.state.mcp_server = server
    return app


def app_from_env() -> Starlette:
    """The app factory uvicorn's worker processes call (``--workers N``): settings from
    :func:`serve_http`'s hand-over variable, else from the environment."""
    raw = os.environ.get(_FACTORY_SETTINGS)
    settings = Settings.model_validate_json(raw) if raw else Settings.from_env()
    return build_http_app(settings)


def serve_http(settings: Settings, host: str = "127.0.0.1", port: int = DEFAULT_PORT, workers: int = 1) -> None:
    """Run the HTTP server until SIGINT/SIGTERM (uvicorn's handlers). ``workers`` > 1 starts that
    many processes on one socket, each with its own services and database pool."""
    import uvicorn

    common: dict[str, Any] = dict(
        host=host,
        port=port,
        log_level=os.environ.get("AGENT_RL_SANDBOX_LOG_LEVEL", "info").lower(),
        timeout_graceful_shutdown=10,
        # longer than a load balancer's idle timeout (60 s is common), so the server never closes a
        # kept-alive connection while a client or proxy is sending the next request on it
        timeout_keep_alive=KEEP_ALIVE_S,
        server_header=False,
    )
    if workers > 1:
        # the workers need the settings, not the web page's secret
        secret = {"ui_token"} & set(Settings.model_fields)
        os.environ[_FACTORY_SETTINGS] = settings.model_dump_json(exclude=secret)
        uvicorn.run("agent_rl_sandbox.server.http:app_from_env", factory=True, workers=workers, **common)
    else:
        uvicorn.run(build_http_app(settings), **common)

"""The page's own authentication, as one ASGI middleware in front of every route.

Rules, in the order they are applied to each HTTP request:

1. **Host**: the ``Host`` header must be one of :attr:`WebConfig.allowed_hosts` (the bound
   ``host:port``; for a loopback bind also ``localhost:port`` and ``127.0.0.1:port``). A page served
   to a browser under another name (DNS rebinding: ``evil.example`` resolving to 127.0.0.1) is
   refused with 421 before anything is read.
2. **Origin**: when present, it must be ``http://`` + an allowed host (403 otherwise), so another
   site's page cannot drive the app even with the user's cookie.
3. **Token**: ``?token=T`` (the URL printed at start) sets an ``HttpOnly``, ``SameSite=Strict``
   cookie and redirects to the same path without the token; every other request must carry that
   cookie (401 otherwise). Tokens are compared in constant time.
4. **CSRF**: every ``POST`` must carry the form field ``csrf`` equal to :func:`csrf_token` (an HMAC of
   the access token under a per-process key); forms rendered by the app include it (403 otherwise).

Every response gets a Content-Security-Policy with no script source at all (the app has no
JavaScript), ``X-Frame-Options: DENY``, ``no-store`` caching, ``nosniff`` and ``same-origin`` referrers (with ``no-referrer`` Chromium sends ``Origin: null`` on the page's own form posts).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "ars_ui_token"
"""Prefix of the cookie that carries the access token after the first visit; the bound port is
appended (:attr:`WebConfig.cookie`), because browsers share cookies between a host's ports and two
pages on one machine would otherwise overwrite each other's token."""

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; img-src 'self' data:; style-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    """True for ``127.0.0.1``, ``localhost``, ``::1`` (any 127.x address too)."""
    return host in LOOPBACK or host.startswith("127.")


def new_token() -> str:
    """A fresh random access token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class WebConfig:
    """How the page is served and who may use it.

    Raises ``ValueError`` for a bind beyond loopback without ``allow_remote`` and a configured
    token (a random token printed on a shared machine's terminal is not a secret worth relying on)."""

    host: str = "127.0.0.1"
    """The address uvicorn binds."""
    port: int = 8766
    """The port (``agent-rl-sandbox ui``'s default, one above ``serve --http``'s 8765)."""
    token: str = field(default_factory=new_token, repr=False)
    """The access token (random per start unless configured)."""
    token_configured: bool = False
    """True when ``token`` came from the operator (``AGENT_RL_SANDBOX_UI_TOKEN``), not drawn here."""
    allow_remote: bool = False
    """Explicit permission to bind an address other than loopback."""
    extra_hosts: tuple[str, ...] = ()
    """More ``Host`` values to accept (``name:port``), e.g. the machine's name for a remote bind."""
    approver: str = "operator"
    """The identity decisions taken on the page are recorded under."""
    csrf_key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def __post_init__(self) -> None:
        if len(self.token) < 16:
            raise ValueError("the access token must be at least 16 characters; set a longer AGENT_RL_SANDBOX_UI_TOKEN")
        if not is_loopback(self.host):
            if not self.allow_remote:
                raise ValueError(
                    f"refusing to bind {self.host}: the page is for loopback only; pass --allow-remote (and "
                    "configure AGENT_RL_SANDBOX_UI_TOKEN) to serve it beyond this machine"
                )
            if not self.token_configured:
                raise ValueError(
                    f"binding {self.host} needs a configured token: set AGENT_RL_SANDBOX_UI_TOKEN to a long "
                    "random secret (a random one printed at start is not enough beyond loopback)"
                )

    @property
    def allowed_hosts(self) -> frozenset[str]:
        """``Host`` header values accepted (lower case)."""
        bound = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        hosts = {f"{bound}:{self.port}"}
        if is_loopback(self.host):
            hosts |= {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        return frozenset(h.lower() for h in (*hosts, *self.extra_hosts))

    @property
    def cookie(self) -> str:
        """The token cookie's name for this page: :data:`COOKIE` + ``_`` + the port."""
        return f"{COOKIE}_{self.port}"

    @property
    def url(self) -> str:
        """The ready-to-open URL with the token (what ``ui`` prints)."""
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}/?{urlencode({'token': self.token})}"


def csrf_token(config: WebConfig) -> str:
    """The CSRF token forms carry: HMAC-SHA256 of the access token under the per-process key."""
    return hmac.new(config.csrf_key, config.token.encode(), hashlib.sha256).hexdigest()


def _deny(status: int, text: str) -> Response:
    return PlainTextResponse(text, status_code=status, headers=SECURITY_HEADERS)


class Guard:
    """ASGI middleware applying the rules of the module docstring to every HTTP request."""

    def __init__(self, app: ASGIApp, config: WebConfig):
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: the app has none
        cfg = self.config
        headers = Headers(scope=scope)
        host = (headers.get("host") or "").lower()
        if host not in cfg.allowed_hosts:
            return await _deny(421, "refused: this page answers only to its bound address (Host header)")(
                scope, receive, send
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in cfg.allowed_hosts}:
            return await _deny(403, "refused: cross-origin request (Origin header)")(scope, receive, send)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given = query.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), cfg.token.encode()):
                return await _deny(401, "refused: wrong access token; open the URL `agent-rl-sandbox ui` printed")(
                    scope, receive, send
                )
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            resp = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), status_code=303)
            resp.set_cookie(cfg.cookie, cfg.token, httponly=True, samesite="strict", path="/")
            return await resp(scope, receive, send)
        cookie = Request(scope).cookies.get(cfg.cookie, "")
        if not hmac.compare_digest(cookie.encode(), cfg.token.encode()):
            return await _deny(401, "refused: no access token; open the URL `agent-rl-sandbox ui` printed")(
                scope, receive, send
            )
        if scope["method"] not in ("GET", "HEAD", "POST"):
            return await _deny(405, "method not allowed")(scope, receive, send)
        if scope["method"] == "POST":
            body = await _read_body(receive, limit=1_000_000)
            if body is None:
                return await _deny(413, "refused: form too large")(scope, receive, send)
            fields = dict(parse_qsl(body.decode("utf-8", errors="replace")))
            if not hmac.compare_digest(fields.get("csrf", "").encode(), csrf_token(cfg).encode()):
                return await _deny(403, "refused: missing or wrong CSRF token; reload the page and submit its form")(
                    scope, receive, send
                )
            receive = _replay(body)
        await self.app(scope, receive, _with_headers(send))


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks, size = [], 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            break
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not msg.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            raw = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in SECURITY_HEADERS]
            raw += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
            message = {**message, "headers": raw}
        await send(message)

    return wrapped

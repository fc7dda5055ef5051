"""The human approval page: a small server-rendered Starlette app (Jinja templates, no JavaScript)
served by ``agent-rl-sandbox ui`` on loopback, with its own authentication.

Public surface:

- :func:`create_app`: the ASGI app over a :class:`~agent_rl_sandbox.services.Services` (queue, job,
  adapters, trajectories, evals and gates; see :mod:`._app` for the routes).
- :class:`WebConfig`: host, port, access token, approver identity; refuses a bind beyond loopback
  without an explicit flag and a configured token.
- :func:`csrf_token`, :data:`COOKIE`: what forms and the browser carry (see :mod:`._security`).
- :func:`bind`, :func:`server`: a listening socket (port 0 works) and the uvicorn server for it.

It is a face like the CLI: every handler calls the same ``tools/`` and ``services`` functions the
CLI does (approval is :meth:`JobService.approve`, bound to the spec hash the page rendered), and no
decision is made in a handler. It is separate from the MCP server: nothing here is reachable over MCP.
"""

from agent_rl_sandbox.web._app import create_app
from agent_rl_sandbox.web._security import COOKIE, WebConfig, csrf_token
from agent_rl_sandbox.web._serve import bind, server

__all__ = ["COOKIE", "WebConfig", "bind", "create_app", "csrf_token", "server"]

"""The stdio server that starts light: ``initialize`` and ``tools/list`` are answered before any tool
code, schema model, SQLAlchemy or the store is touched; everything else is built on the first
``tools/call``.

What a client waits for before its agent can act is the whole start of ``agent-rl-sandbox serve``:
importing the tool table (:mod:`agent_rl_sandbox.server.app`: every schema model and domain
service, SQLAlchemy, Alembic) and building it (opening the store, migrating it, discovering the
tasks, generating 25 tools' JSON schemas) cost about a second on top of the SDK's own start.
:class:`LazyServer` is an ``MCPServer`` with the same name, version, instructions, lifespan and
middleware order as :func:`~agent_rl_sandbox.server.app.build_server`'s, whose tool list comes from
:data:`TOOLS_LIST_PATH` (``tools_list.json``, generated from :data:`~agent_rl_sandbox.server.app.TOOLS`
by ``python -m agent_rl_sandbox.server.lazy --write``; a test checks it equals a fresh
generation, so it cannot drift from the code). On the first ``tools/call`` (before the SDK looks the
tool up) :meth:`LazyServer.load` runs once, in a worker thread so the event loop keeps answering:
:meth:`Services.build <agent_rl_sandbox.services.Services.build>` (the store opened and migrated
before any use of it, the tasks discovered) and :func:`~agent_rl_sandbox.server.app.build_tools`;
the real tools then replace the listed ones and every later call goes straight through.
Concurrent first calls build once (a lock; the second waits for the first's build).

Errors: a bad ``AGENT_RL_SANDBOX_*`` setting still fails at start (the CLI validates settings
before it serves). A store that cannot be opened (a malformed or unreachable
``AGENT_RL_SANDBOX_DATABASE_URL``) no longer stops the process at start: the first tool call
answers a flagged error with the CLI's own ``cannot open the store: ... Next step: ...`` text, the
same line is logged on stderr (``error: ...``), and the next call tries again (a database that was
still starting is picked up without a restart). Nothing is served from a half-built state: until a
build succeeds, every ``tools/call`` answers that error.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import ToolManager
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool

from agent_rl_sandbox import __version__
from agent_rl_sandbox.server._front import INSTRUCTIONS, SERVER_NAME, next_step_middleware, session_lifespan
from agent_rl_sandbox.settings import Settings

if TYPE_CHECKING:
    from agent_rl_sandbox.services import Services

log = logging.getLogger(__name__)

TOOLS_LIST_PATH = Path(__file__).with_name("tools_list.json")
"""The ``tools/list`` entries of :data:`~agent_rl_sandbox.server.app.TOOLS`, as the SDK serialises
them (``{"tools": [...]}``); rewrite with ``python -m agent_rl_sandbox.server.lazy --write``."""

Middleware = Callable[[Any, Callable[[Any], Any]], Any]


def load_tools_list(path: Path = TOOLS_LIST_PATH) -> list[dict[str, Any]]:
    """The cached ``tools/list`` entries (one JSON object per tool, wire field names)."""
    return json.loads(path.read_text(encoding="utf-8"))["tools"]


def fresh_tools_list() -> list[dict[str, Any]]:
    """The ``tools/list`` entries generated now from :data:`~agent_rl_sandbox.server.app.TOOLS`, the
    way :func:`~agent_rl_sandbox.server.app.build_server`'s server lists them (the SDK's own
    conversion and serialisation; the entries depend on the specs only, so no services are built)."""
    from agent_rl_sandbox.server.app import build_tools

    class _Unbound:
        def bind(self, method: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
            return method  # never called: listing the tools only reads their signatures

    server: MCPServer = MCPServer(name=SERVER_NAME, tools=build_tools(_Unbound()))
    listed = anyio.run(server.list_tools)
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]


def write_tools_list(path: Path = TOOLS_LIST_PATH) -> None:
    """Write :func:`fresh_tools_list` to ``path`` (indented JSON, keys in the order the SDK sends them)."""
    doc = {"tools": fresh_tools_list()}
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_error_text(exc: BaseException) -> str:
    """What a tool call answers when the services could not be built: the CLI's ``error:`` text for a
    store that cannot be opened or another actionable error, else the exception named with a next step."""
    from agent_rl_sandbox.tools.errors import ActionError, store_error_text

    if isinstance(exc, ActionError):
        return exc.agent_text()
    text = store_error_text(exc)
    if text is not None:
        return text
    return (
        f"the server could not start its services ({type(exc).__name__}: {exc}). Next step: fix the cause "
        "named above (the server log has the traceback) and call again"
    )


class LazyServer(MCPServer):
    """An ``MCPServer`` for one stdio process that lists its tools from :data:`TOOLS_LIST_PATH` and
    builds its services and tools on the first ``tools/call`` (see the module docstring).

    ``services`` (an attribute, as on :func:`~agent_rl_sandbox.server.app.build_server`'s server)
    exists once :meth:`load` has succeeded."""

    def __init__(self, settings: Settings, tools_list: list[dict[str, Any]] | None = None):
        super().__init__(
            name=SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            middleware=[next_step_middleware, self._tools_middleware],
            lifespan=session_lifespan,
        )
        self._app_settings = settings
        self._listed = [
            MCPTool.model_validate(t) for t in (tools_list if tools_list is not None else load_tools_list())
        ]
        self._lock = threading.Lock()
        self._inner: Middleware | None = None
        self._close_at_exit = False

    @property
    def loaded(self) -> bool:
        """Whether the services and tools are built."""
        return self._inner is not None

    async def list_tools(self) -> list[MCPTool]:
        """The cached entries until :meth:`load`, the real tools' after (the same, by test)."""
        if self._inner is None:
            return list(self._listed)
        return await super().list_tools()

    def close_at_exit(self) -> None:
        """For the process that serves this server: SIGTERM/SIGHUP exit through ``SystemExit`` from
        now on (installed here, on the main thread), and the services, once built, are closed at
        exit (:meth:`Services.close_at_exit <agent_rl_sandbox.services.Services.close_at_exit>`)."""
        from agent_rl_sandbox.services import exit_on_term_signals

        self._close_at_exit = True
        exit_on_term_signals()
        services = getattr(self, "services", None)
        if services is not None:
            services.close_at_exit()

    def load(self) -> Middleware:
        """Build the services and the tools once (thread-safe; a concurrent caller waits for the
        first's build) and return the tool middleware to run inside ``next_step_middleware``.
        Raises whatever :meth:`Services.build` raises (nothing is kept then; the next call retries)."""
        with self._lock:
            if self._inner is not None:
                return self._inner
            from agent_rl_sandbox.server.app import build_tools, tools_middleware
            from agent_rl_sandbox.services import Services

            services: Services = Services.build(self._app_settings)
            try:
                tools = build_tools(services)
                inner = tools_middleware()
            except BaseException:
                services.close()
                raise
            self._tool_manager = ToolManager(tools=tools, warn_on_duplicate_tools=self.settings.warn_on_duplicate_tools)
            self.services = services
            if self._close_at_exit:
                services.close_at_exit()  # from a worker thread: the atexit close (signals are set already)
            self._inner = inner
            return inner

    async def _tools_middleware(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        if getattr(ctx, "method", None) != "tools/call":
            return await call_next(ctx)
        inner = self._inner
        if inner is None:
            try:
                inner = await anyio.to_thread.run_sync(self.load)
            except Exception as e:  # noqa: BLE001 - answered to the agent, logged with its traceback
                text = load_error_text(e)
                log.error("error: %s", text, exc_info=not text.startswith("cannot open the store"))
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await inner(ctx, call_next)


def main(argv: list[str] | None = None) -> int:
    """``python -m agent_rl_sandbox.server.lazy --write``: regenerate :data:`TOOLS_LIST_PATH`;
    ``--check``: exit 1 when it differs from a fresh generation."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args == ["--write"]:
        write_tools_list()
        print(f"wrote {TOOLS_LIST_PATH}")
        return 0
    if args == ["--check"]:
        same = json.dumps(load_tools_list()) == json.dumps(fresh_tools_list())  # key order counts too
        print(f"{TOOLS_LIST_PATH}: " + ("up to date" if same else "stale: run it with --write"))
        return 0 if same else 1
    print("usage: python -m agent_rl_sandbox.server.lazy --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())

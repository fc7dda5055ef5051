"""Issue 16: ``serve`` over stdio answers ``initialize`` and ``tools/list`` before building anything
(:mod:`agent_rl_sandbox.server.lazy`), with the same bytes as the eagerly built server; the store and
tools are built once, on the first tool call, and a broken store URL fails that call clearly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import anyio
import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server
from agent_rl_sandbox.server.lazy import LazyServer, fresh_tools_list, load_tools_list
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
EAGER_SERVER = textwrap.dedent(
    """
    from agent_rl_sandbox.server.app import build_server
    from agent_rl_sandbox.server.stdio import serve_stdio

    serve_stdio(build_server)
    """
)
HEAVY = (  # rich and click are not here: the SDK itself imports them (its logging, uvicorn)
    "typer",
    "sqlalchemy",
    "alembic",
    "detect_secrets",
    "jsonschema",
    "agent_rl_sandbox.server.app",
    "agent_rl_sandbox.schemas.tools",
    "agent_rl_sandbox.tools.store",
    "agent_rl_sandbox.tools.sandbox",
)


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


def test_cached_tools_list_equals_a_fresh_generation():
    cached, fresh = load_tools_list(), fresh_tools_list()
    assert json.dumps(cached) == json.dumps(fresh), (
        "agent_rl_sandbox/server/tools_list.json is stale (a tool's spec or models changed): "
        "run `python -m agent_rl_sandbox.server.lazy --write` and commit the file"
    )
    assert len(cached) == 25


@pytest.mark.anyio
async def test_lazy_list_equals_the_built_servers_before_and_after_the_first_call(services, settings):
    async with Client(build_server(services=services)) as client:
        eager = [t.model_dump(mode="json", by_alias=True) for t in (await client.list_tools()).tools]
    lazy = LazyServer(settings)
    async with Client(lazy) as client:
        before = [t.model_dump(mode="json", by_alias=True) for t in (await client.list_tools()).tools]
        assert not lazy.loaded and not hasattr(lazy, "services")
        assert lazy._tool_manager.list_tools() == []  # nothing can reach the store before the build
        res = await client.call_tool("list_tasks", {})
        assert not res.is_error, _text(res)
        after = [t.model_dump(mode="json", by_alias=True) for t in (await client.list_tools()).tools]
    assert lazy.loaded
    lazy.services.close()
    assert json.dumps(before) == json.dumps(eager) == json.dumps(after)


def _exchange(argv: list[str], env: dict[str, str], calls: list[dict]) -> tuple[list[bytes], str]:
    """Answers (raw stdout lines) to initialize, tools/list and then ``calls`` (ids 3, 4, ...)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    msgs = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs.append({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    msgs += [{"jsonrpc": "2.0", "id": 3 + i, "method": m["method"], "params": m["params"]} for i, m in enumerate(calls)]
    lines = []
    try:
        for msg in msgs:
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            proc.stdin.flush()
            if "id" in msg:
                while True:
                    line = proc.stdout.readline()
                    assert line, proc.stderr.read() if proc.stderr else "server closed stdout"
                    if json.loads(line).get("id") == msg["id"]:
                        lines.append(line)
                        break
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    return lines, err.decode()


def test_serve_over_stdio_answers_the_same_bytes_as_the_eager_server(tmp_path):
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "eager")}
    eager, _ = _exchange([sys.executable, "-c", EAGER_SERVER], env, [])
    env["AGENT_RL_SANDBOX_HOME"] = str(tmp_path / "lazy")
    listing = {"method": "tools/list", "params": {}}
    call = {"method": "tools/call", "params": {"name": "list_tasks", "arguments": {}}}
    lazy, _ = _exchange([sys.executable, "-m", "agent_rl_sandbox.cli", "serve"], env, [call, listing])
    assert lazy[0] == eager[0]  # initialize: name, version, instructions, capabilities
    assert lazy[1] == eager[1]  # tools/list before anything is built
    assert lazy[3].replace(b'"id":4', b'"id":2') == eager[1]  # and after the first call built everything
    assert "claim-before-edit" in lazy[2].decode() and '"isError":false' in lazy[2].decode()


def test_serve_start_imports_none_of_the_tool_code(tmp_path):
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-X", "importtime", "-m", "agent_rl_sandbox.cli", "serve"]
    _, err = _exchange(argv, env, [])
    imported = {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert "agent_rl_sandbox.server.lazy" in imported
    heavy = sorted(m for m in imported if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == [], f"imported at start, before any tool call: {heavy}"
    assert not (tmp_path / "home").exists()  # the store is opened on first use, not at start


@pytest.mark.anyio
async def test_two_first_calls_at_once_build_the_services_once(settings, monkeypatch):
    built = []
    real = Services.build.__func__

    def slow_build(cls, s=None):
        built.append(threading.get_ident())
        time.sleep(0.3)  # long enough for the second call to arrive while the first builds
        return real(cls, s)

    monkeypatch.setattr(Services, "build", classmethod(slow_build))
    lazy = LazyServer(settings)
    results = {}
    async with Client(lazy) as client:

        async def call(name: str) -> None:
            results[name] = await client.call_tool(name, {})

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "list_tasks")
            tg.start_soon(call, "training_list")
    lazy.services.close()
    assert len(built) == 1
    assert {n: r.is_error for n, r in results.items()} == {"list_tasks": False, "training_list": False}


@pytest.mark.anyio
async def test_a_malformed_database_url_fails_the_first_call_with_the_clis_text_and_retries(tmp_path, monkeypatch):
    attempts = []
    real = Services.build.__func__

    def counting_build(cls, s=None):
        attempts.append(1)
        return real(cls, s)

    monkeypatch.setattr(Services, "build", classmethod(counting_build))
    lazy = LazyServer(Settings(home=tmp_path / "home", database_url="notaurl"))
    async with Client(lazy) as client:
        assert len((await client.list_tools()).tools) == 25  # the list is served: the agent sees its tools
        first = await client.call_tool("list_tasks", {})
        second = await client.call_tool("list_tasks", {})
    for res in (first, second):
        assert res.is_error
        assert _text(res).startswith("cannot open the store: Could not parse SQLAlchemy URL")
        assert "Next step: check AGENT_RL_SANDBOX_DATABASE_URL" in _text(res)
    assert len(attempts) == 2 and not lazy.loaded  # nothing half-built is kept; each call tries again


def test_unreachable_database_over_stdio_is_an_error_line_and_a_flagged_call(tmp_path):
    env = {
        **os.environ,
        "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"),
        "AGENT_RL_SANDBOX_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/x",
    }
    call = {"method": "tools/call", "params": {"name": "list_tasks", "arguments": {}}}
    lines, err = _exchange([sys.executable, "-m", "agent_rl_sandbox.cli", "serve"], env, [call])
    answer = json.loads(lines[2])["result"]
    assert answer["isError"] is True
    assert answer["content"][0]["text"].startswith("cannot open the store: (psycopg.OperationalError)")
    assert "error: cannot open the store:" in err and "Traceback" not in err


@pytest.mark.parametrize("after_first_call", [False, True])
def test_sigterm_ends_serve_before_and_after_the_build(tmp_path, after_first_call):
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    msgs = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    if after_first_call:
        msgs.append({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_tasks"}})
    for msg in msgs:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        if "id" in msg:
            assert json.loads(proc.stdout.readline())["id"] == msg["id"]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()

"""Ready-to-paste client configurations (what ``agent-rl-sandbox config claude-code|codex`` prints).

The shipped files are the templates, with the bare command name ``agent-rl-sandbox``:
``claude_code/mcp.json`` (the MCP server entry), ``claude_code/settings.json`` (hooks),
``codex/hooks.json`` (Codex hooks) and ``codex/config.toml`` (the Codex MCP server, the hooks feature
flag and the same hooks inline; :func:`codex_config_toml` of the bare command reproduces it, a test
holds that). A bare name fails wherever the script is not on the client's ``PATH`` (a virtual
environment that is not activated: every hook then fails silently), so the printed configs use

- :func:`resolve_command`: the absolute path of the running console script, else the same
  interpreter with ``-m agent_rl_sandbox.cli``;
- :func:`settings_env`: the home folder (absolute) and, when set, the store URL and task folders,
  as environment variables: in the MCP entry's ``env`` and as a prefix of each hook command (hook
  entries have no ``env`` of their own).

With ``url`` (a server started with ``agent-rl-sandbox serve --http``), :func:`mcp_entry` gives the
streamable-HTTP form instead of a command: Claude Code ``{"type": "http", "url", "headers":
{"Authorization": "Bearer ${VAR}"}}`` (Claude Code expands ``${VAR}`` in ``.mcp.json``), Codex
``url`` and ``bearer_token_env_var = VAR``; the token (from ``agent-rl-sandbox identities add``) stays
in the client's environment, never in the file. The hooks part does not change: hooks record into
the store the settings name (a team store: ``AGENT_RL_SANDBOX_DATABASE_URL``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

AGENTS = Path(__file__).resolve().parent
BARE = "agent-rl-sandbox"
SERVER_NAME = "agent-rl-sandbox"
TOKEN_ENV = "AGENT_RL_SANDBOX_TOKEN"
"""The client-side variable holding the bearer token of an HTTP server (``--url``)."""
_PASSED = ("AGENT_RL_SANDBOX_DATABASE_URL", "AGENT_RL_SANDBOX_TASK_DIRS", "AGENT_RL_SANDBOX_DATA_DIRS")


def resolve_command(argv0: str | None = None) -> list[str]:
    """The argv that starts this installation's CLI from anywhere, as absolute paths.

    ``argv0`` (default ``sys.argv[0]``) when it is the ``agent-rl-sandbox`` console script (resolved
    with ``shutil.which`` when it is a bare name); otherwise ``[sys.executable, "-m",
    "agent_rl_sandbox.cli"]`` (e.g. when run as ``python -m agent_rl_sandbox.cli``)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).name.startswith(BARE):
        found = argv0 if os.sep in argv0 else shutil.which(argv0)
        if found and os.path.isfile(found):
            return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "agent_rl_sandbox.cli"]


def settings_env(home: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The settings a client must pass to the server and hooks: ``AGENT_RL_SANDBOX_HOME`` (absolute),
    the store URL and task/data folders when set, and ``PYTHONPATH`` when this package is imported
    from a checkout through it (so the printed command runs this code, not another install's)."""
    environ = dict(os.environ) if environ is None else environ
    env = {"AGENT_RL_SANDBOX_HOME": str(Path(home).expanduser().resolve())}
    for name in _PASSED:
        if environ.get(name):
            env[name] = environ[name]
    pkg_parent = str(AGENTS.parents[1])
    if pkg_parent in [os.path.abspath(p) for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]:
        env["PYTHONPATH"] = environ["PYTHONPATH"]
    return env


def shell_command(argv: list[str], env: dict[str, str], *args: str) -> str:
    """One shell command line: ``VAR=value ... /abs/agent-rl-sandbox args``, every part quoted."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = " ".join(shlex.quote(a) for a in (*argv, *args))
    return f"{prefix} {cmd}" if prefix else cmd


def mcp_entry(argv: list[str], env: dict[str, str], url: str | None = None) -> dict[str, Any]:
    """The MCP server entry: stdio ``{"command", "args", "env"}``, or with ``url`` the HTTP form
    ``{"url", "token_env"}`` that each client's writer renders its own way."""
    if url:
        return {"url": url, "token_env": TOKEN_ENV}
    return {"command": argv[0], "args": [*argv[1:], "serve"], "env": dict(env)}


def _load(rel: str) -> Any:
    return json.loads((AGENTS / rel).read_text(encoding="utf-8"))


def _rewrite_hooks(hooks: dict[str, Any], client: str, hook_cmd: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        out[event] = []
        for g in groups:
            g = dict(g)
            g["hooks"] = [
                {**h, "command": hook_cmd} if h.get("command") == f"{BARE} hook {client}" else h for h in g["hooks"]
            ]
            out[event].append(g)
    return out


def claude_code_files(argv: list[str], env: dict[str, str], url: str | None = None) -> dict[str, Any]:
    """``{".mcp.json": ..., ".claude/settings.json": ...}`` for Claude Code (paths relative to a project)."""
    mcp = _load("claude_code/mcp.json")
    entry = mcp_entry(argv, env, url)
    if url:
        headers = {"Authorization": f"Bearer ${{{entry['token_env']}}}"}
        mcp["mcpServers"][SERVER_NAME] = {"type": "http", "url": url, "headers": headers}
    else:
        mcp["mcpServers"][SERVER_NAME] = {"type": "stdio", **entry}
    settings = _load("claude_code/settings.json")
    settings["hooks"] = _rewrite_hooks(
        settings["hooks"], "claude-code", shell_command(argv, env, "hook", "claude-code")
    )
    return {".mcp.json": mcp, ".claude/settings.json": settings}


def codex_hooks(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """The Codex ``hooks.json`` document (``{"hooks": {event: [group, ...]}}``)."""
    doc = _load("codex/hooks.json")
    doc["hooks"] = _rewrite_hooks(doc["hooks"], "codex", shell_command(argv, env, "hook", "codex"))
    return doc


def _toml(value: Any) -> str:
    """A TOML value: JSON strings are valid TOML basic strings; inline tables for dicts."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"no TOML for {type(value).__name__}")


def codex_config_toml(argv: list[str], env: dict[str, str], *, with_hooks: bool = True, url: str | None = None) -> str:
    """The Codex ``config.toml`` part: the MCP server (stdio, or HTTP with ``url``), and
    (``with_hooks``) the hooks feature flag and the hooks of :func:`codex_hooks` as inline
    ``[[hooks.<Event>]]`` tables."""
    entry = mcp_entry(argv, env, url)
    lines = [
        "# agent-rl-sandbox for Codex: merge into ~/.codex/config.toml (or <repo>/.codex/config.toml).",
        "# Printed with absolute paths by `agent-rl-sandbox config codex`.",
        f"[mcp_servers.{SERVER_NAME}]",
    ]
    if url:
        lines += [
            f"url = {_toml(url)}",
            f"bearer_token_env_var = {_toml(entry['token_env'])}  # export it: a token from `identities add`",
        ]
    else:
        lines += [
            f"command = {_toml(entry['command'])}",
            f"args = {_toml(entry['args'])}",
            f"env = {_toml(entry['env'])}",
        ]
    lines += [
        "startup_timeout_sec = 30",
        "tool_timeout_sec = 120",
    ]
    if with_hooks:
        lines += [
            "",
            "# Hooks record what Codex does outside the sandbox tools (provenance `hook`). Codex enables",
            "# hooks by default in recent versions; older ones need this flag (there named codex_hooks).",
            "[features]",
            "hooks = true",
        ]
        for event, groups in codex_hooks(argv, env)["hooks"].items():
            for g in groups:
                lines += ["", f"[[hooks.{event}]]"]
                lines += [f"{k} = {_toml(v)}" for k, v in g.items() if k != "hooks"]
                for h in g["hooks"]:
                    lines += ["", f"[[hooks.{event}.hooks]]"] + [f"{k} = {_toml(v)}" for k, v in h.items()]
    return "\n".join(lines) + "\n"

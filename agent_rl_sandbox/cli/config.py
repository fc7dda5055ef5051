"""``agent-rl-sandbox config claude-code | codex``: print ready-to-paste client configurations.

The printed configs start this installation by absolute path (the console script, else this
interpreter with ``-m agent_rl_sandbox.cli``) and carry the settings in force (``AGENT_RL_SANDBOX_HOME``
made absolute; the store URL and task folders when set), so a hook works whatever the client's
``PATH`` is. See :mod:`agent_rl_sandbox.agents.configs`. Exit 2 for an unknown ``--file``.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, group, settings
from agent_rl_sandbox.cli._outcome import BadInput

app = group("Print ready-to-paste MCP server and hook configs for a client (absolute paths, your settings).")


UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        help="An HTTP server (`serve --http`, e.g. http://host:8765/mcp) instead of stdio; the bearer token "
        "is read from $AGENT_RL_SANDBOX_TOKEN in the client's environment.",
    ),
]


def _check_url(url: str | None) -> None:
    if url is not None and not url.startswith(("http://", "https://")):
        raise BadInput(
            f"--url {url!r} is not an http(s) URL", "give the URL `serve --http` prints, e.g. http://127.0.0.1:8765/mcp"
        )


def _resolved(home):
    from agent_rl_sandbox.agents.configs import resolve_command, settings_env

    return resolve_command(), settings_env(settings(home).home)


@app.command("claude-code")
def claude_code(
    file: Annotated[
        str | None,
        typer.Option(
            "--file", metavar="FILE", help="Print only this file: mcp (.mcp.json) or settings (.claude/settings.json)."
        ),
    ] = None,
    url: UrlOpt = None,
    home: HomeOpt = None,
) -> None:
    """Print <project>/.mcp.json (the MCP server) and .claude/settings.json (hooks that record every
    event as `hook` steps), with absolute paths. Merge settings.json into an existing one."""
    from agent_rl_sandbox.agents.configs import claude_code_files

    _check_url(url)
    files = claude_code_files(*_resolved(home), url=url)
    names = {"mcp": ".mcp.json", "settings": ".claude/settings.json"}
    if file is not None:
        if file not in names:
            raise BadInput(f"unknown --file {file!r}", "use --file mcp or --file settings")
        typer.echo(json.dumps(files[names[file]], indent=2))
        return
    for name, doc in files.items():
        typer.echo(f"# <project>/{name}")
        typer.echo(json.dumps(doc, indent=2))


@app.command("codex")
def codex(
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            metavar="FILE",
            help="config (config.toml: server, feature flag and hooks inline; the default), "
            "server (config.toml without hooks) or hooks (hooks.json).",
        ),
    ] = None,
    url: UrlOpt = None,
    home: HomeOpt = None,
) -> None:
    """Print the Codex config.toml part (MCP server, hooks feature flag, hooks that record every event as
    `hook` steps) with absolute paths; --file hooks prints hooks.json instead."""
    from agent_rl_sandbox.agents.configs import codex_config_toml, codex_hooks

    _check_url(url)
    argv, env = _resolved(home)
    if file in (None, "config", "server"):
        typer.echo(codex_config_toml(argv, env, with_hooks=file != "server", url=url), nl=False)
    elif file == "hooks":
        typer.echo(json.dumps(codex_hooks(argv, env), indent=2))
    else:
        raise BadInput(f"unknown --file {file!r}", "use --file config, --file server or --file hooks")

"""The lean path of ``agent-rl-sandbox serve`` (stdio): no typer, rich or click import.

A client (Claude Code, Codex) starts ``agent-rl-sandbox serve`` and waits for its tool list before
its agent can act; building the typer app for the command costs tens of milliseconds of that.
:func:`run_lean` handles the plain forms itself: no arguments, ``--home DIR`` and ``--task-dir
DIR`` (repeatable; ``--opt=DIR`` too). It reads the settings the way
:func:`agent_rl_sandbox.cli._common.settings` does and then serves exactly what the typer command
serves (:func:`serve_stdio_lazy`), so the two paths cannot differ.

It returns without side effects (so the typer app runs the command instead, with its usual help,
parsing and error text) for any other arguments (``--http``, ``--help``, a typo) and when the
settings do not validate: nothing has been claimed or printed yet, so the app's re-run prints its
own ``error: bad setting ...`` line and exits 2, as before.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_rl_sandbox.settings import Settings

_VALUE_OPTIONS = {"--home": "home", "--task-dir": "task_dir"}


def parse_lean(args: list[str]) -> dict[str, list[str]] | None:
    """``{"home": [DIR] or [], "task_dir": [DIR, ...]}`` for the plain forms (see the module
    docstring), else ``None``."""
    parsed: dict[str, list[str]] = {"home": [], "task_dir": []}
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if name not in _VALUE_OPTIONS:
            return None
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None
            value = args[i + 1]
            i += 1
        key = _VALUE_OPTIONS[name]
        if not value or (key == "home" and parsed["home"]):
            return None  # an empty value or a repeated --home: typer's rules apply there
        parsed[key].append(value)
        i += 1
    return parsed


def lean_settings(parsed: dict[str, list[str]]) -> Settings:
    """The settings :func:`agent_rl_sandbox.cli._common.settings` builds for the same options
    (raises what ``Settings.from_env`` raises on a bad setting)."""
    from agent_rl_sandbox.settings import Settings

    home = Path(parsed["home"][0]) if parsed["home"] else None
    base = Settings.from_env(home=home)
    if parsed["task_dir"]:
        base = base.model_copy(update={"task_dirs": (*base.task_dirs, *(Path(d) for d in parsed["task_dir"]))})
    return base


def serve_stdio_lazy(resolved: Settings) -> None:
    """Serve ``resolved`` over stdio with a :class:`~agent_rl_sandbox.server.lazy.LazyServer` (tools
    listed at once, services built on the first tool call): what ``serve`` without ``--http`` runs,
    from the typer command and from :func:`run_lean` alike."""
    from agent_rl_sandbox.server.stdio import serve_stdio

    def build():
        from agent_rl_sandbox.server.lazy import LazyServer

        return LazyServer(resolved)

    serve_stdio(build)


def run_lean(args: list[str]) -> None:
    """Run ``serve`` for ``args`` (the words after ``serve``) and exit, or return when the app must."""
    parsed = parse_lean(args)
    if parsed is None:
        return
    try:
        resolved = lean_settings(parsed)
    except Exception:  # noqa: BLE001 - a bad setting: the app re-reads it and prints its own error line
        return
    try:
        serve_stdio_lazy(resolved)
    except KeyboardInterrupt:
        sys.exit(130)  # what the typer app exits with on Ctrl-C
    sys.exit(0)

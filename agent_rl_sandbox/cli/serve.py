"""``agent-rl-sandbox serve``: the MCP server over stdio (what Claude Code and Codex launch).

Settings are read before stdout is claimed (a bad setting is one ``error:`` line, exit 2); the
server and its tools are imported only after, so nothing they print can reach the wire.
"""

from __future__ import annotations

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, settings


def serve(home: HomeOpt = None, task_dir: TaskDirOpt = None) -> None:
    """Run the MCP server over stdio (what Claude Code and Codex launch)."""
    from agent_rl_sandbox.server.stdio import serve_stdio

    resolved = settings(home, task_dir)

    def build():
        from agent_rl_sandbox.server.app import build_server

        return build_server(resolved)

    serve_stdio(build)

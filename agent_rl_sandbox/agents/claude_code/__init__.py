"""Claude Code integration: the hook recorder (:mod:`.hook`, also Codex's) and configuration templates.

``agent-rl-sandbox config claude-code`` prints these with the absolute path of this installation and
the settings in force (:mod:`agent_rl_sandbox.agents.configs`); the files themselves use the bare
command name, which works only with the script on the client's ``PATH``.

- ``settings.json``: hooks that call ``agent-rl-sandbox hook claude-code`` on every recorded event, and
  ``enabledMcpjsonServers`` to approve the project's MCP server. Copy or merge into
  ``<project>/.claude/settings.json`` (or ``~/.claude/settings.json``).
- ``mcp.json``: the MCP server entry (``agent-rl-sandbox serve`` over stdio). Claude Code reads MCP
  servers from ``<project>/.mcp.json`` (or ``claude mcp add``), not from ``settings.json``.
"""

"""Claude Code integration: the hook command (:mod:`.hook`) and ready-to-use configuration files.

- ``settings.json``: hooks that call ``agent-rl-sandbox hook claude-code`` on every recorded event, and
  ``enabledMcpjsonServers`` to approve the project's MCP server. Copy or merge into
  ``<project>/.claude/settings.json`` (or ``~/.claude/settings.json``).
- ``mcp.json``: the MCP server entry (``agent-rl-sandbox serve`` over stdio). Claude Code reads MCP
  servers from ``<project>/.mcp.json`` (or ``claude mcp add``), not from ``settings.json``.
"""

"""MCP server: a thin adapter that wires tools/ to the MCP SDK: ``app`` (the tool table), ``stdio``
(one agent per process) and ``http`` (streamable HTTP for a team: bearer-token identities, quotas)."""

"""MCP server: a thin adapter that wires tools/ to the MCP SDK (stdio transport)."""

"""Domain logic behind every MCP tool. Never imports ``server`` (or torch)."""

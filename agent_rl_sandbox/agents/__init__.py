"""Client descriptors (Claude Code, Codex) and scripted agents that play sandbox episodes."""

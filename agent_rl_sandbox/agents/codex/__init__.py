"""Codex integration: ready-to-use configuration files (templates for ``agent-rl-sandbox config codex``).

- ``config.toml``: the MCP server entry (``agent-rl-sandbox serve`` over stdio), the hooks feature flag
  and hooks that call ``agent-rl-sandbox hook codex`` on SessionStart, UserPromptSubmit, PreToolUse,
  PostToolUse and Stop, inline. Merge into ``~/.codex/config.toml`` (or ``<repo>/.codex/config.toml``).
- ``hooks.json``: the same hooks as a ``hooks.json`` file (``~/.codex/hooks.json`` or
  ``<repo>/.codex/hooks.json``), for those who keep hooks apart; use one of the two, not both.

Codex's hook payloads share Claude Code's field names, so one recorder serves both
(:mod:`agent_rl_sandbox.agents.claude_code.hook`, client :data:`~agent_rl_sandbox.agents.claude_code.hook.CODEX`).
"""

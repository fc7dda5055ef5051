"""agent-rl-sandbox: disposable sandboxes, trajectories, reward specs and training data for coding agents.

Subpackages (see DESIGN.md):
- ``tools``: domain logic behind every MCP tool, usable without MCP.
- ``server``: the thin MCP adapter over ``tools``.
- ``schemas``: pydantic models and the JSON Schema files generated from them (the data contract).
- ``agents``: client descriptors (Claude Code, Codex) and scripted/policy agents.
- ``trainers``: the only place that imports torch/trl/peft.
- ``tasks``: built-in task fixtures.
"""

__version__ = "0.1.0"

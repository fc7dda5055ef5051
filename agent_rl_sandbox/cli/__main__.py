"""``python -m agent_rl_sandbox.cli``: the same as the ``agent-rl-sandbox`` console script."""

from agent_rl_sandbox.cli import main

main()

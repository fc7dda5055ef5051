"""The light core: importing the server (or the CLI) never imports torch."""

import subprocess
import sys


def test_server_import_does_not_import_torch():
    code = (
        "import sys, agent_rl_sandbox.server, agent_rl_sandbox.server.app, agent_rl_sandbox.server.stdio, "
        "agent_rl_sandbox.cli, agent_rl_sandbox.services\n"
        "heavy = sorted(m for m in ('torch', 'trl', 'peft', 'transformers', 'vllm', 'datasets') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

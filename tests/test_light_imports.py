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


def test_trainers_package_imports_without_the_training_stack():
    """``agent_rl_sandbox.trainers`` (and its plan, data and stage modules) import torch & co only
    inside functions, so the CLI can import it lazily and say what to install."""
    code = (
        "import sys, agent_rl_sandbox.trainers as t, agent_rl_sandbox.trainers.tiny_model, "
        "agent_rl_sandbox.trainers._plan, agent_rl_sandbox.trainers._data, agent_rl_sandbox.trainers.train_stage\n"
        "heavy = sorted(m for m in ('torch', 'trl', 'peft', 'transformers', 'datasets', 'accelerate') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "assert callable(t.plan_from_job) and 'run_training' in t.__all__\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

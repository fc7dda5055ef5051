"""Errors a user can act on end in one line on stderr and exit code 2, never a traceback."""

import os
import subprocess
import sys

import pytest


def _cli(args, tmp_path, **env):
    full = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), **env}
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", *args], env=full, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["demo", "--task", "nope"], {}, "unknown task 'nope'"),
        (["tasks", "check", "nope"], {}, "unknown task(s) ['nope']"),
        (["tasks", "show", "nope"], {}, "unknown task 'nope'"),
        (["tasks", "list"], {"AGENT_RL_SANDBOX_ISOLATION": "bogus"}, "bad setting AGENT_RL_SANDBOX_ISOLATION='bogus'"),
        (["serve"], {"AGENT_RL_SANDBOX_IDLE_SECONDS": "soon"}, "bad setting"),
        (["serve"], {"AGENT_RL_SANDBOX_ISOLATION": "bogus"}, "bad setting AGENT_RL_SANDBOX_ISOLATION='bogus'"),
        (["serve"], {"AGENT_RL_SANDBOX_JOB_MAX_STEPS": "many"}, "bad setting AGENT_RL_SANDBOX_JOB_MAX_STEPS='many'"),
        (["score", "store"], {"AGENT_RL_SANDBOX_DATABASE_URL": "notaurl"}, "cannot open the store"),
        (
            ["score", "store"],
            {"AGENT_RL_SANDBOX_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/x"},
            "cannot open the store",
        ),
    ],
)
def test_user_errors_exit_2_without_traceback(tmp_path, args, env, needle):
    p = _cli(args, tmp_path, **env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stderr
    assert "Traceback" not in p.stderr and "╭─" not in p.stderr

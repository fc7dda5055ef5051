"""``serve``'s lean entry (:mod:`agent_rl_sandbox.cli._lean_serve`) takes only the plain forms, and
builds the settings the typer command builds; everything else is left to the typer app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_rl_sandbox.cli._common import settings as typer_settings
from agent_rl_sandbox.cli._lean_serve import lean_settings, parse_lean


@pytest.mark.parametrize(
    ("args", "parsed"),
    [
        ([], {"home": [], "task_dir": []}),
        (["--home", "h"], {"home": ["h"], "task_dir": []}),
        (["--home=h", "--task-dir", "a", "--task-dir=b"], {"home": ["h"], "task_dir": ["a", "b"]}),
        (["--http"], None),
        (["--help"], None),
        (["--home"], None),
        (["--home", "--http"], None),
        (["--home", "a", "--home", "b"], None),
        (["--home="], None),
        (["--port", "1"], None),
        (["extra"], None),
    ],
)
def test_only_the_plain_forms_take_the_lean_path(args, parsed):
    assert parse_lean(args) == parsed


def test_lean_settings_equal_the_typer_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_RL_SANDBOX_TASK_DIRS", str(tmp_path / "env-tasks"))
    monkeypatch.setenv("AGENT_RL_SANDBOX_IDLE_SECONDS", "12")
    home, extra = tmp_path / "h", [tmp_path / "a", tmp_path / "b"]
    lean = lean_settings({"home": [str(home)], "task_dir": [str(p) for p in extra]})
    assert lean == typer_settings(home, extra)
    assert lean_settings({"home": [], "task_dir": []}) == typer_settings(None, None)


def test_serve_help_is_still_the_typer_apps(tmp_path):
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), "COLUMNS": "160"}
    p = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "serve", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "--http" in p.stdout and "--task-dir" in p.stdout
    assert not Path(tmp_path / "home").exists()

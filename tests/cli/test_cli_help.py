"""Help shows metavars (``DIR``, ``TASK_ID...``, ``FILE...``), never Python types (``<list[Path]>``),
for every command and group; and asking for help (or validating a file) stays light: no SQLAlchemy,
no torch, no server imported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

PYTHON_TYPE = re.compile(r"<(?:str|bool|int|float|path|Path|file|list\[[^\]]*\])>")
runner = CliRunner()


def _command_paths(group, prefix=()):
    """Every command path of the app, groups included: (), ("tasks",), ("tasks", "list"), ..."""
    yield prefix
    for name, cmd in getattr(group, "commands", {}).items():
        yield from _command_paths(cmd, (*prefix, name))


PATHS = sorted(_command_paths(typer.main.get_command(app)))


def helptext(*path: str) -> str:
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_every_command_is_listed():
    names = {p[0] for p in PATHS if p}
    assert {"serve", "demo", "tasks", "trajectories", "score", "validate", "import", "export", "hook"} <= names
    assert ("tasks", "check") in PATHS and ("trajectories", "show") in PATHS and ("hook", "claude-code") in PATHS
    assert {("hook", "codex"), ("hook", "drain"), ("config", "claude-code"), ("config", "codex")} <= set(PATHS)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "root")
def test_help_shows_no_python_types(path):
    text = helptext(*path)
    assert not PYTHON_TYPE.findall(text), PYTHON_TYPE.findall(text)


def test_help_shows_metavars():
    assert "import [OPTIONS] FILE..." in helptext("import") and "FILE..." in helptext("validate")
    check = helptext("tasks", "check")
    assert "[TASK_ID...]" in check and re.search(r"--task-dir\s+DIR", check) and re.search(r"--home\s+DIR", check)
    score = helptext("score")
    assert re.search(r"--gate\s+NAME", score) and re.search(r"--spec\s+FILE", score)
    assert re.search(r"--min-reward\s+REWARD", helptext("export"))
    assert "SESSION_ID" in helptext("trajectories", "show") and "TASK_ID" in helptext("tasks", "show")
    assert re.search(r"--file\s+FILE", helptext("config", "codex")) and re.search(
        r"--url\s+URL", helptext("config", "codex")
    )
    assert re.search(r"--wait\s+SECONDS", helptext("hook", "drain"))


@pytest.mark.parametrize("args", [["--help"], ["score", "--help"], ["validate", "SAMPLE"]])
def test_help_and_validate_import_no_sqlalchemy_or_torch(args):
    sample = Path(__file__).resolve().parents[1] / "fixtures" / "samples" / "trl" / "language_modeling_standard.jsonl"
    args = [str(sample) if a == "SAMPLE" else a for a in args]
    code = (
        "import sys\n"
        f"sys.argv = ['agent-rl-sandbox', *{args!r}]\n"
        "from agent_rl_sandbox.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = sorted(m for m in ('sqlalchemy', 'torch', 'agent_rl_sandbox.server', 'agent_rl_sandbox.services')"
        " if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr

"""Output piped at 80 columns cuts nothing (fresh user, session 5: `score`'s failed criteria and the
`jobs list` reason column were cut with an ellipsis), and usage lines (also a usage error's) show
metavars (``FILE...``), never ``{FILE}``. The commands run as real processes with stdout a pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "fixtures" / "port_daddy" / "claim_before_edit.suite.json"
ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "80",
        "AGENT_RL_SANDBOX_HOME": str(home),
    }
    env.pop("TERMINAL_WIDTH", None)
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _paths(group, prefix=()):
    yield prefix
    for name, cmd in getattr(group, "commands", {}).items():
        yield from _paths(cmd, (*prefix, name))


def test_help_piped_at_80_columns_cuts_no_option_or_word():
    runner = CliRunner()
    for path in sorted(_paths(typer.main.get_command(app))):
        r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": None})
        assert r.exit_code == 0, r.output
        assert ELLIPSIS not in r.stdout, (path, [ln for ln in r.stdout.splitlines() if ELLIPSIS in ln])
    export = runner.invoke(app, ["export", "--help"], env={"COLUMNS": "80"}).stdout
    assert "--include-unknown-tasks" in export and "AGENT_RL_SANDBOX_TASK_DIRS" in export


def test_a_usage_error_shows_metavars_not_braces(tmp_path):
    for args, usage in (
        (["validate"], "validate [OPTIONS] FILE..."),
        (["tasks", "show"], "tasks show [OPTIONS] TASK_ID"),
        (["score"], "score [OPTIONS] PATH"),
    ):
        p = _cli(*args, home=tmp_path / "home")
        assert p.returncode == 2, p.stderr
        assert usage in p.stderr and "{" not in p.stderr, p.stderr


def test_score_piped_prints_every_criterion_and_header_whole(tmp_path):
    p = _cli("score", str(SUITE), home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert ELLIPSIS not in p.stdout, p.stdout
    lines = p.stdout.splitlines()
    # one row a trajectory, the failed criterion whole on it; the summary's headers whole
    assert any("review-ordered-late-test" in ln and "expected_action_2" in ln for ln in lines), p.stdout
    assert any("averageReward" in ln and "evalGatePassed" in ln and "deployable" in ln for ln in lines)


def test_tasks_list_piped_prints_every_description_whole(tmp_path):
    home = tmp_path / "home"
    doc = json.loads(_cli("tasks", "list", "--json", home=home).stdout)
    p = _cli("tasks", "list", home=home)
    assert p.returncode == 0, p.stderr
    assert ELLIPSIS not in p.stdout
    lines = p.stdout.splitlines()
    for t in doc["tasks"]:
        assert any(t["id"] in ln and t["description"] in ln for ln in lines), t["id"]


def test_route_piped_prints_every_reason_whole(tmp_path):
    home = tmp_path / "home"
    rec = json.loads(_cli("route", "--behaviour", "claim-before-edit", "--json", home=home).stdout)
    p = _cli("route", "--behaviour", "claim-before-edit", home=home)
    assert p.returncode == 0, p.stderr
    assert ELLIPSIS not in p.stdout
    # the reasons whole, with the MCP field they advise passing named as this command's flag
    texts = [r["text"].replace("pass base_model_params", "pass --params") for r in rec["reasons"]]
    assert texts and all(t in p.stdout for t in texts)

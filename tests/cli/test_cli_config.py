"""``agent-rl-sandbox config claude-code|codex``: the printed configs name this installation by
absolute path and carry the settings, so they work from a client whose PATH lacks the script; the
printed hook command, run through a shell as the client runs it, records a real event."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agent_rl_sandbox.agents.configs import codex_config_toml, resolve_command

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "agent_rl_sandbox" / "agents"
POST = json.loads((ROOT / "tests" / "agents" / "fixtures" / "claude_code" / "PostToolUse.input.json").read_text())
CODEX_POST = json.loads((ROOT / "tests" / "agents" / "fixtures" / "codex" / "PostToolUse.input.json").read_text())
BARE_PATH = "/usr/bin:/bin"  # a client's PATH without the virtual environment


def config(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("AGENT_RL_SANDBOX_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "config", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def run_in_shell(command: str, event: dict) -> subprocess.CompletedProcess:
    """As Claude Code and Codex run a hook: through a shell, event on stdin, their own environment."""
    env = {"PATH": BARE_PATH, "HOME": os.environ.get("HOME", "/root"), "AGENT_RL_SANDBOX_HOOK_LINGER": "0"}
    return subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(event), capture_output=True, text=True, env=env, timeout=60
    )


def drain_and_steps(home: Path) -> list:
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("AGENT_RL_SANDBOX_DATABASE_URL", None)
    d = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "drain", "--wait", "60"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert d.returncode == 0, d.stdout + d.stderr
    from agent_rl_sandbox.tools.store import Store

    store = Store(f"sqlite:///{home / 'store.db'}")
    try:
        rows, _ = store.trajectories.list()
        return [(r.origin, s) for r in rows for s in store.trajectories.get(r.session_id).steps]
    finally:
        store.close()


def _split_docs(text: str) -> dict[str, dict]:
    docs, name, buf = {}, None, []
    for line in text.splitlines():
        if line.startswith("# <project>/"):
            if name:
                docs[name] = json.loads("\n".join(buf))
            name, buf = line.removeprefix("# <project>/"), []
        else:
            buf.append(line)
    docs[name] = json.loads("\n".join(buf))
    return docs


def test_claude_code_config_runs_from_a_bare_path(tmp_path):
    home = tmp_path / "home"
    p = config("claude-code", home=home)
    assert p.returncode == 0, p.stderr
    docs = _split_docs(p.stdout)
    server = docs[".mcp.json"]["mcpServers"]["agent-rl-sandbox"]
    assert Path(server["command"]).is_absolute() and server["args"][-1] == "serve"
    assert server["env"]["AGENT_RL_SANDBOX_HOME"] == str(home.resolve())
    hooks = docs[".claude/settings.json"]["hooks"]
    assert set(hooks) >= {"SessionStart", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"}
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    (command,) = commands
    assert "agent-rl-sandbox hook claude-code" not in command and command.endswith("hook claude-code")
    assert f"AGENT_RL_SANDBOX_HOME={shlex.quote(str(home.resolve()))}" in command
    # The printed server command starts this installation (here: a quick command instead of serve).
    listed = subprocess.run(
        [server["command"], *server["args"][:-1], "tasks", "list", "--json"],
        env={"PATH": BARE_PATH, **server["env"]},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0 and "claim-before-edit" in listed.stdout, listed.stderr
    # The printed hook command records a real event, from a client whose PATH lacks the script.
    proc = run_in_shell(command, dict(POST, session_id="cfg-1"))
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    steps = drain_and_steps(home)
    assert [(o, s.provenance, s.tool_calls[0].function_name) for o, s in steps] == [
        ("hook:claude-code", "hook", "Write")
    ]
    only = config("claude-code", "--file", "settings", home=home)
    assert json.loads(only.stdout)["hooks"] == hooks


def test_codex_config_is_valid_toml_and_its_hooks_record(tmp_path):
    home = tmp_path / "home"
    p = config("codex", home=home)
    assert p.returncode == 0, p.stderr
    doc = tomllib.loads(p.stdout)
    server = doc["mcp_servers"]["agent-rl-sandbox"]
    assert Path(server["command"]).is_absolute() and server["env"]["AGENT_RL_SANDBOX_HOME"] == str(home.resolve())
    assert doc["features"]["hooks"] is True
    assert set(doc["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
    (command,) = {h["command"] for groups in doc["hooks"].values() for g in groups for h in g["hooks"]}
    assert command.endswith("hook codex")
    hooks_json = json.loads(config("codex", "--file", "hooks", home=home).stdout)
    assert hooks_json["hooks"] == doc["hooks"]
    assert "hooks" not in tomllib.loads(config("codex", "--file", "server", home=home).stdout)
    proc = run_in_shell(command, CODEX_POST)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    steps = drain_and_steps(home)
    assert [(o, s.provenance, s.tool_calls[0].function_name) for o, s in steps] == [("hook:codex", "hook", "Bash")]


def test_the_shipped_codex_template_is_the_bare_name_config():
    shipped = (AGENTS / "codex" / "config.toml").read_text()
    assert shipped == codex_config_toml(["agent-rl-sandbox"], {})


def test_resolve_command(tmp_path):
    script = tmp_path / "bin" / "agent-rl-sandbox"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    assert resolve_command(str(script)) == [str(script)]
    assert resolve_command("/somewhere/agent_rl_sandbox/cli/__main__.py") == [
        sys.executable,
        "-m",
        "agent_rl_sandbox.cli",
    ]


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_unknown_file_is_bad_input(tmp_path, client):
    p = config(client, "--file", "nope", home=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("error: unknown --file 'nope'") and "Next step" in p.stderr

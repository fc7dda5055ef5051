"""The real server over real stdio: stdout carries protocol messages only, and the demo works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from agent_rl_sandbox.agents.demo import run_demo

NOISY_SERVER = textwrap.dedent(
    """
    import os, subprocess, sys
    from agent_rl_sandbox.server.stdio import serve_stdio

    def build():
        print("stray print while importing tool code")
        from agent_rl_sandbox.server.app import build_server
        server = build_server()

        @server.tool()
        def noisy(text: str) -> str:
            '''A tool whose code prints to stdout in three ways.'''
            print("print from a tool:", text)
            sys.stdout.write("sys.stdout.write from a tool\\n")
            os.write(1, b"raw fd 1 write from a tool\\n")
            subprocess.run(["echo", "child process writing to its stdout"])
            return "ok " + text

        return server

    serve_stdio(build)
    """
)


def _rpc(proc, msg: dict) -> None:
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def _read_response(proc, want_id: int, seen: list[str]) -> dict:
    while True:
        line = proc.stdout.readline()
        assert line, "server closed stdout"
        seen.append(line.decode())
        msg = json.loads(line)  # every stdout line must be JSON
        assert msg.get("jsonrpc") == "2.0", msg
        if msg.get("id") == want_id:
            return msg


def test_stdout_carries_only_protocol_messages(tmp_path):
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-c", NOISY_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    seen: list[str] = []
    try:
        _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            },
        )
        init = _read_response(proc, 1, seen)
        assert init["result"]["serverInfo"]["name"] == "agent-rl-sandbox"
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "noisy", "arguments": {"text": "hi"}},
            },
        )
        res = _read_response(proc, 2, seen)
        assert res["result"]["content"][0]["text"] == "ok hi"
        _rpc(
            proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_tasks", "arguments": {}}}
        )
        res = _read_response(proc, 3, seen)
        assert "claim-before-edit" in json.dumps(res["result"]["structuredContent"])
    finally:
        proc.stdin.close()
        rest, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=30)
    for line in rest.decode().splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    stderr = err.decode()
    for needle in (
        "stray print while importing",
        "print from a tool",
        "sys.stdout.write from a tool",
        "raw fd 1 write from a tool",
        "child process writing",
    ):
        assert needle in stderr, f"{needle!r} should have been routed to stderr"
        assert all(needle not in line for line in seen)


@pytest.mark.anyio
async def test_demo_over_stdio(settings):
    good, careless = await run_demo(settings)
    assert good.passed and good.reward == 1.0 and not good.self_report_only and good.failed_criteria == []
    assert not careless.passed and careless.reward < 1.0 and careless.self_report_only
    assert {"claims_before_edit", "edits_within_claims", "verifier_passes"} <= set(careless.failed_criteria)
    assert good.tool_errors == [] and careless.tool_errors == []


def test_demo_cli_prints_table_and_exits_zero(tmp_path):
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), "COLUMNS": "160"}
    p = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "demo"], env=env, capture_output=True, text=True, timeout=180
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "good-agent" in p.stdout and "careless-agent" in p.stdout
    careless = next(ln for ln in p.stdout.splitlines() if "careless-agent" in ln)  # piped: one line a row
    assert [c.strip() for c in careless.split("│")[3:6]] == ["0.200", "no", "yes"] and "1.000" in p.stdout
    assert str(tmp_path / "home") in p.stdout  # where the data lives

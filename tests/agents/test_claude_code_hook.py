"""``agent-rl-sandbox hook claude-code`` on the documented payload shapes: pairing by tool use id, the
``tool_response`` field, failures, re-fired Stop hooks, and never blocking Claude Code."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from agent_rl_sandbox.agents.claude_code.hook import record_event
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.trajectories import conversation

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
AGENTS = Path(__file__).resolve().parents[2] / "agent_rl_sandbox" / "agents"


def payload(name: str, **changes) -> dict:
    d = json.loads((FIXTURES / f"{name}.input.json").read_text())
    d["session_id"] = "sess-1"
    for k, v in changes.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return d


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'store.db'}")
    yield s
    s.close()


def _hook_env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")}
    env.update(AGENT_RL_SANDBOX_HOME=str(home), **extra)
    return env


def run_hook(home: Path, event, **env) -> tuple[subprocess.CompletedProcess, float]:
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "claude-code"],
        input=raw,
        capture_output=True,
        env=_hook_env(home, **env),
        timeout=60,
    )
    return proc, time.perf_counter() - t0


def only_trajectory(store):
    rows, total = store.trajectories.list()
    assert total == 1
    return store.trajectories.get(rows[0].session_id)


def test_a_session_through_the_real_command(tmp_path):
    home = tmp_path / "home"
    events = [
        payload("SessionStart"),
        payload("UserPromptSubmit"),
        payload("PreToolUse", tool_use_id="toolu_A"),
        payload("PostToolUse", tool_use_id="toolu_A"),
        payload(
            "PreToolUse", tool_use_id="toolu_B", tool_input={"command": "npm test", "description": "Run test suite"}
        ),
        payload("PostToolUseFailure", tool_use_id="toolu_B"),
        payload("Stop", stop_hook_active=False),
        payload("Stop", stop_hook_active=True),
        payload("SessionEnd"),
    ]
    times = []
    for ev in events:
        proc, dt = run_hook(home, ev)
        assert proc.returncode == 0 and proc.stdout == b"", (ev["hook_event_name"], proc.stderr)
        times.append(dt)
    print(
        f"\nhook process latency over {len(times)} events: median {statistics.median(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms"
    )
    store = Store(f"sqlite:///{home / 'store.db'}")
    t = only_trajectory(store)
    assert t.status == "finished" and t.origin == "hook:claude-code" and t.external_id == "claude-code:sess-1"
    assert t.agent.model_name == "claude-sonnet-5"
    assert all(s.provenance == "hook" for s in t.steps)
    events_seen = [s.extra.get("event") for s in t.steps]
    assert events_seen == ["session_start", "user_prompt", "tool_use", "tool_use", "end_of_turn", "session_end"]
    ok, failed = t.steps[2], t.steps[3]
    assert ok.tool_calls[0].function_name == "Write" and ok.outcome == "ok" and ok.extra["paired_pre"] is True
    assert json.loads(ok.observation.results[0].content) == {"filePath": "/path/to/file.txt", "success": True}
    assert (
        failed.outcome == "error"
        and failed.exit_code == 1
        and "Cannot find module" in failed.observation.results[0].content
    )
    end = t.steps[4]
    assert end.extra == {"event": "end_of_turn", "stop_events": 2, "stop_hook_active_seen": True}
    assert t.final_message == end.message == "I've completed the refactoring. Here's a summary..."
    store.close()


def test_post_event_without_tool_response_is_reported_not_stored_empty(store, tmp_path):
    record_event(store, payload("PreToolUse"))
    res = record_event(store, payload("PostToolUse", tool_response=None, tool_result={"success": True}))
    assert res.problems and "no tool_response" in res.problems[0] and "tool_result" in res.problems[0]
    step = only_trajectory(store).steps[-1]
    assert step.observation is None and step.outcome == "unknown"
    assert step.extra["missing_result"] is True and "tool_response" in step.extra["hook_problem"]
    # The real command says so on stderr (and still exits 0 with nothing on stdout).
    proc, _ = run_hook(tmp_path / "h2", payload("PostToolUse", tool_response=None))
    assert proc.returncode == 0 and proc.stdout == b"" and b"no tool_response" in proc.stderr


def test_pre_without_post_becomes_a_step_with_unknown_outcome(store):
    record_event(store, payload("UserPromptSubmit"))
    record_event(store, payload("PreToolUse", tool_use_id="toolu_lost"))
    record_event(store, payload("PreToolUse", tool_use_id="toolu_done"))
    record_event(store, payload("PostToolUse", tool_use_id="toolu_done"))
    assert len(only_trajectory(store).steps) == 2  # the lost call is still pending
    record_event(store, payload("UserPromptSubmit", prompt="next"))
    steps = only_trajectory(store).steps
    lost = [s for s in steps if s.tool_calls and s.tool_calls[0].tool_call_id == "toolu_lost"]
    assert len(lost) == 1 and lost[0].outcome == "unknown" and lost[0].observation is None
    assert lost[0].extra["missing_result"] is True
    # A post that arrives after its turn closed is kept as a late result, not lost or duplicated.
    record_event(store, payload("PostToolUse", tool_use_id="toolu_lost"))
    late = only_trajectory(store).steps[-1]
    assert late.extra["late_result_for_step"] == lost[0].step_id and late.observation is not None
    record_event(store, payload("PostToolUse", tool_use_id="toolu_lost"))  # a re-fired duplicate adds nothing
    assert only_trajectory(store).steps[-1].step_id == late.step_id


def test_refired_stop_hooks_make_one_end_of_turn(store):
    record_event(store, payload("UserPromptSubmit"))
    record_event(store, payload("Stop", stop_hook_active=False, last_assistant_message="first try"))
    record_event(store, payload("PreToolUse", tool_use_id="toolu_more"))
    record_event(store, payload("PostToolUse", tool_use_id="toolu_more"))
    record_event(store, payload("Stop", stop_hook_active=True, last_assistant_message="after the blocking hook"))
    record_event(store, payload("Stop", stop_hook_active=True, last_assistant_message="really done"))
    record_event(store, payload("UserPromptSubmit", prompt="thanks"))
    steps = only_trajectory(store).steps
    ends = [s for s in steps if s.extra.get("event") == "end_of_turn"]
    assert len(ends) == 1 and ends[0].message == "really done" and ends[0].extra["stop_events"] == 3
    kinds = [s.extra.get("event") for s in steps]
    assert kinds == ["user_prompt", "tool_use", "end_of_turn", "user_prompt"]  # the continuation's call is in the turn


def test_the_command_never_blocks(tmp_path):
    home = tmp_path / "home"
    for raw in (
        b"",
        b"not json",
        b"[1, 2]",
        json.dumps({"hook_event_name": "Stop", "stop_hook_active": True}).encode(),
    ):
        proc, _ = run_hook(home, raw)
        assert proc.returncode == 0 and proc.stdout == b""
    # An unreachable store: exit 0 promptly, the event is kept (redacted) for later.
    ev = payload("PostToolUse", tool_input={"command": "echo AKIAIOSFODNN7EXAMPLE"})
    proc, dt = run_hook(home, ev, AGENT_RL_SANDBOX_DATABASE_URL="postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert proc.returncode == 0 and proc.stdout == b"" and dt < 15
    spool = (home / "hooks" / "failed-events.jsonl").read_text()
    assert "PostToolUse" in spool and "AKIAIOSFODNN7EXAMPLE" not in spool


def test_a_locked_store_times_out_instead_of_hanging(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    Store(f"sqlite:///{home / 'store.db'}").close()
    import sqlite3

    holder = sqlite3.connect(home / "store.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the database
    try:
        proc, dt = run_hook(home, payload("UserPromptSubmit"), AGENT_RL_SANDBOX_HOOK_TIMEOUT="1")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 0 and proc.stdout == b"" and dt < 10
    assert b"could not record UserPromptSubmit" in proc.stderr
    assert "UserPromptSubmit" in (home / "hooks" / "failed-events.jsonl").read_text()


def test_session_end_finishes_and_a_resumed_session_links_back(store):
    record_event(store, payload("SessionStart"))
    first = record_event(store, payload("SessionEnd"))
    assert first.finished
    resumed = record_event(store, payload("SessionStart", source="resume"))
    assert resumed.session_id != first.session_id
    assert store.trajectories.summary(resumed.session_id).parent_session_id == first.session_id


def test_secrets_in_hook_events_never_reach_the_store(store):
    url = "https://deploy:tok3n-value@registry.example.com/simple"
    record_event(store, payload("PreToolUse", tool_use_id="toolu_S", tool_input={"command": f"pip install -i {url} x"}))
    with store.engine.connect() as conn:
        pending = " ".join(r[0] for r in conn.exec_driver_sql("SELECT data_json FROM hook_pending"))
    assert "tok3n-value" not in pending and "[REDACTED:basic-auth-credentials]" in pending
    record_event(
        store,
        payload(
            "PostToolUse",
            tool_use_id="toolu_S",
            tool_input={"command": f"pip install -i {url} x"},
            tool_response={"stdout": f"Looking in indexes: {url}", "stderr": "", "interrupted": False},
        ),
    )
    assert "tok3n-value" not in only_trajectory(store).model_dump_json()


def test_ignored_events_create_nothing(store):
    assert record_event(store, payload("Notification")).session_id is None
    res = record_event(store, {"hook_event_name": "SomethingNew", "session_id": "x"})
    assert res.session_id is None and "unknown hook event" in res.problems[0]
    assert store.trajectories.list()[1] == 0


def test_concurrent_hook_processes_share_one_trajectory(tmp_path):
    home = tmp_path / "home"
    procs = []
    env = _hook_env(home)
    for i in range(8):
        ev = json.dumps(payload("PostToolUse", tool_use_id=f"toolu_{i}")).encode()
        p = subprocess.Popen(
            [sys.executable, "-m", "agent_rl_sandbox.cli", "hook", "claude-code"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        procs.append((p, ev))
    for p, ev in procs:
        out, err = p.communicate(ev, timeout=60)
        assert p.returncode == 0 and out == b"", err
    store = Store(f"sqlite:///{home / 'store.db'}")
    t = only_trajectory(store)
    assert sorted(s.tool_calls[0].tool_call_id for s in t.steps) == [f"toolu_{i}" for i in range(8)]
    store.close()


def test_hook_trajectory_becomes_a_valid_sft_conversation(store, tmp_path):
    for ev in (
        payload("SessionStart"),
        payload("UserPromptSubmit"),
        payload("PreToolUse", tool_use_id="t1"),
        payload("PostToolUse", tool_use_id="t1"),
        payload("Stop", stop_hook_active=False),
        payload("SessionEnd"),
    ):
        record_event(store, ev)
    conv = conversation(only_trajectory(store))
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[1]["tool_calls"][0]["function"]["name"] == "Write"
    assert conv.messages[-1]["content"].startswith("I've completed")


def test_shipped_client_configs():
    settings = json.loads((AGENTS / "claude_code" / "settings.json").read_text())
    hooks = settings["hooks"]
    assert {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionEnd",
    } <= set(hooks)
    for groups in hooks.values():
        for group in groups:
            for h in group["hooks"]:
                assert h == {"type": "command", "command": "agent-rl-sandbox hook claude-code", "timeout": 15}
    assert settings["enabledMcpjsonServers"] == ["agent-rl-sandbox"]
    mcp = json.loads((AGENTS / "claude_code" / "mcp.json").read_text())["mcpServers"]["agent-rl-sandbox"]
    assert (mcp["command"], mcp["args"]) == ("agent-rl-sandbox", ["serve"])
    codex = tomllib.loads((AGENTS / "codex" / "config.toml").read_text())["mcp_servers"]["agent-rl-sandbox"]
    assert (codex["command"], codex["args"]) == ("agent-rl-sandbox", ["serve"])

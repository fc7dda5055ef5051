"""``agent-rl-sandbox hook claude-code`` on the documented payload shapes: pairing by tool use id, the
``tool_response`` field, failures, re-fired Stop hooks, late events after SessionEnd, the final
message from ``transcript_path``, and never blocking Claude Code (the event is queued; the drainer
folds it into the store, see ``test_hook_queue.py``)."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hookrun import drain, hook_env, only_trajectory, open_store, run_hook

from agent_rl_sandbox.agents.claude_code.hook import record_event
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.trajectories import conversation

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
AGENTS = Path(__file__).resolve().parents[2] / "agent_rl_sandbox" / "agents"
TRANSCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "claude_code" / "session-7f3c1a52.jsonl"


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
    d = drain(home)
    assert d.returncode == 0, d.stderr
    store = open_store(home)
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
    # The real command folding inline says so on stderr (and still exits 0 with nothing on stdout);
    # in the background, the drainer writes it to <home>/hooks/drain.log.
    proc, _ = run_hook(
        tmp_path / "h2", payload("PostToolUse", tool_response=None), AGENT_RL_SANDBOX_HOOK_DRAIN="inline"
    )
    assert proc.returncode == 0 and proc.stdout == b"" and b"no tool_response" in proc.stderr
    proc, _ = run_hook(tmp_path / "h3", payload("PostToolUse", tool_response=None))
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    d = drain(tmp_path / "h3")  # whoever folded it (the background drainer or this drain) reported it
    assert d.returncode == 0 and "no tool_response" in (tmp_path / "h3" / "hooks" / "drain.log").read_text() + d.stderr


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
    # An unreachable store: exit 0 at once; the event stays queued (never lost) and `hook drain` says why.
    ev = payload("PostToolUse", tool_input={"command": "echo AKIAIOSFODNN7EXAMPLE"})
    bad_url = {"AGENT_RL_SANDBOX_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"}
    proc, dt = run_hook(home, ev, **bad_url)
    assert proc.returncode == 0 and proc.stdout == b"" and dt < 15
    d = drain(home, **bad_url)
    assert d.returncode == 1 and "stay queued" in d.stderr, d.stderr
    queued = [f for f in (home / "hooks").glob("*.jsonl") if f.name not in ("queue.jsonl", "failed-events.jsonl")]
    assert any("AKIAIOSFODNN7EXAMPLE" in f.read_text() for f in queued)  # kept for that store, not lost
    assert all(f.stat().st_mode & 0o077 == 0 for f in queued)  # unredacted until folded: owner only
    # The default store's drainer leaves that store's events alone.
    d = drain(home)
    assert d.returncode == 0 and "folded 0" in d.stdout
    assert any("AKIAIOSFODNN7EXAMPLE" in f.read_text() for f in (home / "hooks").glob("*.jsonl"))


def test_a_locked_store_loses_no_event(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    Store(f"sqlite:///{home / 'store.db'}").close()
    import sqlite3

    holder = sqlite3.connect(home / "store.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the database
    try:
        times = []
        for ev in (payload("SessionStart"), payload("UserPromptSubmit")):
            proc, dt = run_hook(home, ev, AGENT_RL_SANDBOX_HOOK_TIMEOUT="1")
            assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
            times.append(dt)
        d = drain(home, AGENT_RL_SANDBOX_HOOK_TIMEOUT="1")
        assert d.returncode == 1 and "stay queued" in d.stderr and "still queued 2" in d.stdout, (d.stdout, d.stderr)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert max(times) < 10  # the hook never waits for the store
    assert drain(home).returncode == 0
    store = open_store(home)
    assert [s.extra["event"] for s in only_trajectory(store).steps] == ["session_start", "user_prompt"]
    store.close()


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
    env = hook_env(home)
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
    assert drain(home).returncode == 0
    store = open_store(home)
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
    codex = tomllib.loads((AGENTS / "codex" / "config.toml").read_text())
    assert (codex["mcp_servers"]["agent-rl-sandbox"]["command"], codex["mcp_servers"]["agent-rl-sandbox"]["args"]) == (
        "agent-rl-sandbox",
        ["serve"],
    )
    codex_hooks = json.loads((AGENTS / "codex" / "hooks.json").read_text())["hooks"]
    assert set(codex_hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
    assert codex["hooks"] == codex_hooks and codex["features"]["hooks"] is True  # one truth, two forms


def test_a_post_tool_use_after_session_end_opens_nothing(store, tmp_path):
    record_event(store, payload("SessionStart"))
    record_event(store, payload("SessionEnd"))
    late = record_event(store, payload("PostToolUse", tool_use_id="toolu_late"))
    assert late.late and "after SessionEnd" in late.problems[0]
    rows, total = store.trajectories.list()
    assert total == 1 and rows[0].status == "finished"  # no new trajectory left running forever
    # Through the real command: the late event is set aside (redacted), not lost and not a new trajectory.
    home = tmp_path / "home"
    secret = "https://deploy:tok3n-value@registry.example.com/simple"
    for ev in (payload("SessionStart"), payload("SessionEnd"), payload("PostToolUse", tool_input={"command": secret})):
        run_hook(home, ev)
    drain(home)  # (the background drainer may have folded them already: the file is the record)
    aside = (home / "hooks" / "failed-events.jsonl").read_text()
    assert "after SessionEnd" in aside and "tok3n-value" not in aside
    s2 = open_store(home)
    assert [r.status for r in s2.trajectories.list()[0]] == ["finished"]
    s2.close()


def test_the_final_message_comes_from_the_transcript(tmp_path):
    """Claude Code's Stop may carry no ``last_assistant_message``: the hook reads the turn's last
    assistant text from ``transcript_path`` (a real transcript shape), so evidence criteria have it."""
    home = tmp_path / "home"
    transcript = tmp_path / "t.jsonl"
    shutil.copy(TRANSCRIPT, transcript)
    for ev in (
        payload("SessionStart", transcript_path=str(transcript)),
        payload("UserPromptSubmit", transcript_path=str(transcript)),
        payload("Stop", stop_hook_active=False, last_assistant_message=None, transcript_path=str(transcript)),
        payload("SessionEnd", transcript_path=str(transcript)),
    ):
        proc, _ = run_hook(home, ev)
        assert proc.returncode == 0
    assert drain(home).returncode == 0
    store = open_store(home)
    t = only_trajectory(store)
    want = "Fixed: discounted() now rounds half-up to cents with Decimal. `python -m pytest -q`: 4 passed."
    end = [s for s in t.steps if s.extra.get("event") == "end_of_turn"][0]
    assert end.message == want and end.extra["final_message_from"] == "transcript_path"
    assert t.status == "finished" and t.final_message == want
    store.close()
    # A session ended with no Stop at all: SessionEnd reads it too.
    home2 = tmp_path / "home2"
    for ev in (payload("SessionStart"), payload("SessionEnd", transcript_path=str(transcript))):
        run_hook(home2, ev)
    assert drain(home2).returncode == 0
    s2 = open_store(home2)
    assert only_trajectory(s2).final_message == want
    s2.close()


def test_the_hook_process_imports_nothing_heavy(tmp_path):
    """The lean path: no typer, rich, pydantic or SQLAlchemy in the hook process."""
    code = (
        "import io, sys\n"
        "sys.argv = ['agent-rl-sandbox', 'hook', 'claude-code']\n"
        'sys.stdin = io.TextIOWrapper(io.BytesIO(b\'{"hook_event_name": "Stop", "session_id": "s"}\'))\n'
        "from agent_rl_sandbox.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "heavy = sorted(m for m in ('typer', 'rich', 'pydantic', 'sqlalchemy', 'click') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = hook_env(tmp_path / "home", AGENT_RL_SANDBOX_HOOK_DRAIN="off")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert '"hook_event_name":"Stop"' in (tmp_path / "home" / "hooks" / "queue.jsonl").read_text()


def test_evidence_criteria_pass_on_a_hook_trajectory(store, tmp_path):
    """The final message read from the transcript (the Stop carries none) backs a test run the hook
    recorded, so ``final_message_evidence`` passes on a hook trajectory."""
    from agent_rl_sandbox.agents.hooks import enrich
    from agent_rl_sandbox.schemas.reward import RewardSpec
    from agent_rl_sandbox.tools.evals import score_trajectory

    transcript = tmp_path / "t.jsonl"
    last = {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Fixed. `python -m pytest -q`: 4 passed."}],
        },
    }
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "fix it"}}) + "\n" + json.dumps(last) + "\n"
    )
    cmd = {"command": "python -m pytest -q", "description": "Run the tests"}
    result = {"stdout": "....\n4 passed in 0.05s", "stderr": "", "interrupted": False, "isImage": False}
    for ev in (
        payload("SessionStart"),
        payload("UserPromptSubmit"),
        payload("PreToolUse", tool_name="Bash", tool_input=cmd, tool_use_id="b1"),
        payload("PostToolUse", tool_name="Bash", tool_input=cmd, tool_use_id="b1", tool_response=result),
        payload("Stop", stop_hook_active=False, last_assistant_message=None, transcript_path=str(transcript)),
        payload("SessionEnd"),
    ):
        record_event(store, enrich(ev))
    t = only_trajectory(store)
    assert t.final_message == "Fixed. `python -m pytest -q`: 4 passed."
    spec = RewardSpec.model_validate(
        {"criteria": [{"id": "ev", "type": "final_message_evidence"}], "aggregation": "all"}
    )
    (c,) = score_trajectory(t, spec).criteria
    assert c.status == "pass", c.explanation


def test_a_mid_turn_text_is_not_taken_for_the_final_message(tmp_path):
    """When the transcript's last lines are a tool call and its result, the assistant text before them
    was said mid-turn: no final message is read (rather than a wrong one)."""
    from agent_rl_sandbox.agents.hooks import transcript_final_message

    lines = [
        {"type": "user", "message": {"role": "user", "content": "fix the bug"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Let me run the tests."}]}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
        {"type": "summary", "summary": "x"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert transcript_final_message(path) is None
    path.write_text(
        path.read_text()
        + json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}})
        + "\n{cut"
    )
    assert transcript_final_message(path) == "Done."  # a half-written last line is skipped
    assert transcript_final_message(tmp_path / "missing.jsonl") is None
    from agent_rl_sandbox.agents.hooks import enrich

    sub = enrich({"hook_event_name": "SubagentStop", "transcript_path": str(path)})
    assert "last_assistant_message" not in sub  # the main transcript is not the subagent's

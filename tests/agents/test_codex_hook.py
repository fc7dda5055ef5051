"""``agent-rl-sandbox hook codex`` on Codex's hook payload shapes (schema-exact samples, see
``fixtures/codex/README.md``): a Codex session through the real command becomes one trajectory of
``hook`` steps with origin ``hook:codex``; Bash results arrive as a plain string."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hookrun import drain, only_trajectory, open_store, run_hook

from agent_rl_sandbox.agents.claude_code.hook import CODEX, record_event
from agent_rl_sandbox.agents.hooks import transcript_final_message
from agent_rl_sandbox.tools.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
ROLLOUT = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "codex"
EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
COMMON = {"session_id", "transcript_path", "cwd", "hook_event_name", "model", "permission_mode"}
REQUIRED = {  # the required fields of Codex's generated input schemas (fixtures/codex/README.md)
    "SessionStart": COMMON | {"source"},
    "UserPromptSubmit": COMMON | {"turn_id", "prompt"},
    "PreToolUse": COMMON | {"tool_name", "tool_input", "tool_use_id"},
    "PostToolUse": COMMON | {"turn_id", "tool_name", "tool_input", "tool_response", "tool_use_id"},
    "Stop": COMMON | {"turn_id", "stop_hook_active", "last_assistant_message"},
}


def payload(name: str, **changes) -> dict:
    d = json.loads((FIXTURES / f"{name}.input.json").read_text())
    d.update(changes)
    return d


def test_fixtures_have_exactly_the_schema_fields():
    for name in EVENTS:
        assert set(payload(name)) == REQUIRED[name], name
        assert payload(name)["hook_event_name"] == name


def test_a_codex_session_through_the_real_command(tmp_path):
    home = tmp_path / "home"
    for name in EVENTS:
        proc, _ = run_hook(home, payload(name), client="codex")
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b"", (name, proc.stderr)
    # The next prompt closes the turn (Codex has no SessionEnd): the end of turn is written then.
    run_hook(home, payload("UserPromptSubmit", turn_id="turn-2", prompt="thanks"), client="codex")
    d = drain(home)
    assert d.returncode == 0, d.stdout + d.stderr
    store = open_store(home)
    t = only_trajectory(store)
    assert t.origin == "hook:codex" and t.external_id == "codex:" + payload("Stop")["session_id"]
    assert t.agent.name == "codex" and t.agent.model_name == "gpt-5.1-codex"
    assert all(s.provenance == "hook" for s in t.steps)
    kinds = [s.extra.get("event") for s in t.steps]
    assert kinds == ["session_start", "user_prompt", "tool_use", "end_of_turn", "user_prompt"]
    call = t.steps[2]
    assert call.tool_calls[0].function_name == "Bash" and call.tool_calls[0].tool_call_id == "call_Q8mR2vTz"
    assert call.tool_calls[0].arguments == {"command": "python -m pytest -q"} and call.extra["paired_pre"]
    assert call.outcome == "ok" and "4 passed" in call.observation.results[0].content
    assert t.steps[1].extra["turn_id"] == "turn-1"
    assert t.steps[3].message == payload("Stop")["last_assistant_message"]
    assert t.status == "running"  # no SessionEnd in Codex: the README says so
    store.close()


def test_codex_and_claude_sessions_with_one_id_stay_apart(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    record_event(store, payload("SessionStart"), client=CODEX)
    record_event(store, payload("SessionStart"))  # the same session id from Claude Code
    rows, total = store.trajectories.list()
    assert total == 2 and {r.origin for r in rows} == {"hook:codex", "hook:claude-code"}
    store.close()


def test_final_message_from_a_codex_rollout(tmp_path):
    rollout = ROLLOUT / "rollout-2026-11-21T10-00-00-019a2d7a.jsonl"
    assert transcript_final_message(rollout).startswith("Added test_full_discount; it fails")
    # a rollout whose content is only in event_msg records (no response_item twins)
    event_only = ROLLOUT / "rollout-2025-10-28T09-00-00-0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b.event-only.jsonl"
    assert transcript_final_message(event_only) == "Fixed: `run_sync` -> `run_blocking` in src/lib.rs; 12 tests pass."
    # A Stop with a null last_assistant_message (the schema allows it) takes it from the rollout.
    copy = tmp_path / "rollout.jsonl"
    shutil.copy(rollout, copy)
    home = tmp_path / "home"
    for ev in (payload("UserPromptSubmit"), payload("Stop", last_assistant_message=None, transcript_path=str(copy))):
        run_hook(home, ev, client="codex")
    run_hook(home, payload("UserPromptSubmit", prompt="next"), client="codex")
    assert drain(home).returncode == 0
    store = open_store(home)
    end = [s for s in only_trajectory(store).steps if s.extra.get("event") == "end_of_turn"][0]
    assert end.message.startswith("Added test_full_discount") and end.extra["final_message_from"] == "transcript_path"
    store.close()


def test_an_idle_codex_session_is_finished_with_its_last_turn(tmp_path):
    """Codex sends no SessionEnd: a session idle for AGENT_RL_SANDBOX_IDLE_SECONDS is finished by the
    drainer, its pending end of turn written and its message the final message (not running forever)."""
    import time

    home = tmp_path / "home"
    for name in EVENTS:
        run_hook(home, payload(name), client="codex")
    assert drain(home).returncode == 0
    store = open_store(home)
    assert only_trajectory(store).status == "running"  # fresh: left alone
    store.close()
    time.sleep(1.2)
    d = drain(home, AGENT_RL_SANDBOX_IDLE_SECONDS="1")
    assert d.returncode == 0 and "finished 1 idle session(s)" in d.stdout, d.stdout + d.stderr
    store = open_store(home)
    t = only_trajectory(store)
    assert t.status == "finished" and t.final_message == payload("Stop")["last_assistant_message"]
    assert [s.extra.get("event") for s in t.steps][-2:] == ["end_of_turn", "session_end"]
    assert t.steps[-1].extra["reason"] == "idle"
    store.close()
    # the same session speaking again opens a new trajectory linked to the finished one
    run_hook(home, payload("UserPromptSubmit", turn_id="turn-9", prompt="still there?"), client="codex")
    assert drain(home).returncode == 0
    store = open_store(home)
    rows, total = store.trajectories.list()
    assert total == 2 and {r.parent_session_id for r in rows} == {None, t.session_id}
    store.close()

"""The hook queue and its drainer: exactly-once folding (a batch folded twice adds nothing), crash
recovery from a batch left behind, a bad event set aside without blocking the rest, and a
background drainer that exits and leaves nothing queued."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hookrun import drain, drainer_processes, only_trajectory, open_store, run_hook

from agent_rl_sandbox.agents import hooks
from agent_rl_sandbox.agents._drain import drain as drain_now
from agent_rl_sandbox.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


def payload(name: str, **changes) -> dict:
    d = json.loads((FIXTURES / f"{name}.input.json").read_text())
    d["session_id"] = "q-1"
    d.update(changes)
    return d


def _queue(home: Path, monkeypatch, *events: dict) -> Path:
    monkeypatch.setenv("AGENT_RL_SANDBOX_HOME", str(home))
    monkeypatch.delenv("AGENT_RL_SANDBOX_DATABASE_URL", raising=False)
    for ev in events:
        hooks.enqueue(home, "claude-code", hooks.enrich(ev))
    return home / "hooks" / "queue.jsonl"


SESSION = [
    payload("SessionStart"),
    payload("UserPromptSubmit"),
    payload("PreToolUse", tool_use_id="t1"),
    payload("PostToolUse", tool_use_id="t1"),
    payload("Stop", stop_hook_active=False),
    payload("UserPromptSubmit", prompt="again"),
]


def test_a_batch_folded_twice_adds_nothing(tmp_path, monkeypatch):
    home = tmp_path / "home"
    queue = _queue(home, monkeypatch, *SESSION)
    saved = queue.read_bytes()
    settings = Settings(home=home)
    assert drain_now(settings).folded == len(SESSION)
    store = open_store(home)
    first = [s.model_dump(exclude={"step_id"}) for s in only_trajectory(store).steps]
    store.close()
    # A drainer that died after committing but before deleting its batch: the same lines again.
    (home / "hooks" / "batch.default.00000000000000000001.1.jsonl").write_bytes(saved)
    report = drain_now(settings)
    assert report.folded == len(SESSION) and not report.problems
    store = open_store(home)
    again = [s.model_dump(exclude={"step_id"}) for s in only_trajectory(store).steps]
    store.close()
    assert again == first and [s["extra"]["event"] for s in first] == [
        "session_start",
        "user_prompt",
        "tool_use",
        "end_of_turn",
        "user_prompt",
    ]
    assert not list((home / "hooks").glob("batch.*"))


def test_a_left_batch_resumes_from_its_done_count(tmp_path, monkeypatch):
    home = tmp_path / "home"
    queue = _queue(home, monkeypatch, *SESSION)
    lines = queue.read_bytes().splitlines(keepends=True)
    queue.unlink()
    batch = home / "hooks" / "batch.default.00000000000000000001.1.jsonl"
    batch.write_bytes(b"".join(lines))
    batch.with_suffix(".done").write_text("0")
    report = drain_now(Settings(home=home))
    assert report.folded == len(SESSION) and not batch.exists() and not batch.with_suffix(".done").exists()


def test_a_bad_event_is_set_aside_and_the_rest_folded(tmp_path, monkeypatch):
    home = tmp_path / "home"
    queue = _queue(home, monkeypatch, payload("SessionStart"))
    with open(queue, "ab") as f:
        f.write(b'{"qid": "x", "client": "no-such-client", "event": {}}\n{not json\n')
    hooks.enqueue(home, "claude-code", payload("UserPromptSubmit"))
    report = drain_now(Settings(home=home))
    assert (report.folded, report.failed, report.left) == (2, 2, 0)
    assert "no-such-client" in (home / "hooks" / "failed-events.jsonl").read_text()
    store = open_store(home)
    assert [s.extra["event"] for s in only_trajectory(store).steps] == ["session_start", "user_prompt"]
    store.close()


def test_the_background_drainer_folds_and_exits(tmp_path):
    home = tmp_path / "home"
    for ev in SESSION[:4]:
        proc, _ = run_hook(home, ev)
        assert proc.returncode == 0 and proc.stdout == b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # no `hook drain`: the background drainer alone
        queue = home / "hooks" / "queue.jsonl"
        empty = not queue.exists() or not queue.read_bytes()
        # every drainer the hooks spawned has exited (one may still be starting up, not yet holding
        # the lock: seen in CI, where a late drainer took the lock after the queue was empty)
        idle = not drainer_processes(home) and not hooks.drainer_running(home, "default")
        if empty and idle and not list((home / "hooks").glob("batch.*")):
            break
        time.sleep(0.2)
    store = open_store(home)
    assert [s.extra["event"] for s in only_trajectory(store).steps] == ["session_start", "user_prompt", "tool_use"]
    store.close()
    assert not drainer_processes(home) and not hooks.drainer_running(home, "default")
    assert drain(home).stdout.startswith("folded 0")


def test_queue_and_folders_are_private(tmp_path, monkeypatch):
    home = tmp_path / "home"
    queue = _queue(home, monkeypatch, payload("SessionStart"))
    assert queue.stat().st_mode & 0o077 == 0 and (home / "hooks").stat().st_mode & 0o077 == 0
    rec = json.loads(queue.read_text())
    assert set(rec) == {"qid", "client", "at", "event"} and len(rec["qid"]) == 32 and rec["client"] == "claude-code"
    assert os.environ["AGENT_RL_SANDBOX_HOME"] == str(home)


def test_a_bad_hook_setting_is_named_and_the_event_kept(tmp_path):
    """AGENT_RL_SANDBOX_HOOK_TIMEOUT=abc in the hook's environment (inline fold): the hook still
    exits 0 with nothing on stdout, names the variable and what it expects on stderr, and keeps
    the event queued; once the value is fixed, the drain folds it."""
    home = tmp_path / "home"
    proc, _ = run_hook(home, SESSION[0], AGENT_RL_SANDBOX_HOOK_DRAIN="inline", AGENT_RL_SANDBOX_HOOK_TIMEOUT="abc")
    assert proc.returncode == 0 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "AGENT_RL_SANDBOX_HOOK_TIMEOUT='abc' is not a number of seconds" in err, err
    assert (home / "hooks" / "queue.jsonl").read_bytes()
    assert drain(home).stdout.startswith("folded 1")


def test_a_foreground_drain_does_not_wait_out_the_linger(tmp_path):
    """The hook's background drainer lingers (here 120 s) for more events; ``hook drain`` finding
    it there does not wait that out: the drainer sees the drain is wanted, leaves, and the
    foreground drain takes the lock and finishes long before the linger would have ended."""
    home = tmp_path / "home"
    proc, _ = run_hook(home, SESSION[0], AGENT_RL_SANDBOX_HOOK_LINGER="120")
    assert proc.returncode == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not hooks.drainer_running(home, "default"):
        time.sleep(0.05)
    assert hooks.drainer_running(home, "default"), "the background drainer should be lingering"
    t0 = time.monotonic()
    done = drain(home)
    took = time.monotonic() - t0
    assert done.returncode == 0 and done.stdout.startswith("folded "), done.stderr
    assert took < 60, took  # the linger is 120 s: waiting it out would fail this
    assert not hooks.drainer_running(home, "default")
    assert not (home / "hooks" / "drain.wanted.default").exists()
    store = open_store(home)
    assert [s.extra["event"] for s in only_trajectory(store).steps] == ["session_start"]
    store.close()


def test_hook_input_that_is_no_json_object_is_kept_raw_and_counted_by_drain(tmp_path):
    """Fresh user, session 5: malformed hook input went only to stderr. The hook still exits 0 with
    nothing on stdout, and keeps the input byte for byte (base64) with the reason in
    failed-events.jsonl beside the queue; `hook drain` reports how many events that file holds."""
    import base64

    home = tmp_path / "home"
    inputs = [b"\xff\xfe{not utf-8", b'{"hook_event_name": "PreToolUse", "tool', b"[1, 2, 3]"]
    for raw in inputs:
        proc, _ = run_hook(home, raw)
        assert proc.returncode == 0 and proc.stdout == b""
        assert "failed-events.jsonl" in proc.stderr.decode()
    failed = home / "hooks" / "failed-events.jsonl"
    assert failed.stat().st_mode & 0o777 == 0o600
    records = [json.loads(line) for line in failed.read_text().splitlines()]
    assert [base64.b64decode(r["raw_base64"]) for r in records] == inputs
    assert [r["raw_bytes"] for r in records] == [len(raw) for raw in inputs]
    assert all(r["client"] == "claude-code" and r["at"] for r in records)
    assert records[0]["error"].startswith("hook input is not JSON")
    assert records[1]["error"].startswith("hook input is not JSON")
    assert records[2]["error"] == "hook input is not a JSON object (a list)"
    assert not (home / "hooks" / "queue.jsonl").exists() or not (home / "hooks" / "queue.jsonl").read_bytes()
    run_hook(home, SESSION[0])  # a good event beside them is recorded as usual
    out = drain(home)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{failed} holds 3 event(s) that could not be recorded" in out.stdout, out.stdout
    store = open_store(home)
    try:
        assert store.trajectories.list()[1] == 1
    finally:
        store.close()

"""The sandboxes and hook-events repositories return typed records and keep their transactions whole."""

from __future__ import annotations

import dataclasses

import pytest

from agent_rl_sandbox.tools.store import PendingEvent, SandboxRecord, StoreError


def test_sandbox_rows_come_back_as_frozen_records(store):
    t = store.trajectories.start(agent={"name": "a"}, sandbox_id="sbx_1")
    store.sandboxes.add(
        sandbox_id="sbx_1", task_id="task", session_id=t.session_id, path="/h/sandboxes/sbx_1",
        base_commit="c0", status="open", isolation="none",
    )  # fmt: skip
    store.sandboxes.add(sandbox_id="sbx_2", task_id="task", session_id=t.session_id, path="/h/sandboxes/sbx_2", base_commit="c1",
                        status="open", isolation="none")  # fmt: skip
    rec = store.sandboxes.get("sbx_1")
    assert isinstance(rec, SandboxRecord)
    assert (rec.task_id, rec.session_id, rec.base_commit, rec.claims) == ("task", t.session_id, "c0", ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.status = "finished"  # type: ignore[misc]
    store.sandboxes.update("sbx_1", claims=["src/", "a.py"], status="finished")
    after = store.sandboxes.get("sbx_1")
    assert (after.claims, after.status) == (("src/", "a.py"), "finished") and after.updated_at >= rec.updated_at
    assert [r.sandbox_id for r in store.sandboxes.list()] == ["sbx_1", "sbx_2"]
    assert [r.sandbox_id for r in store.sandboxes.list("open")] == ["sbx_2"]
    with pytest.raises(StoreError, match="unknown sandbox") as e:
        store.sandboxes.get("sbx_nope")
    assert "sandbox_reset" in e.value.hint
    with pytest.raises(ValueError, match="claims_json"):
        store.sandboxes.update("sbx_1", claims_json="[]")


def test_hook_events_and_their_steps_commit_together(store):
    sid = store.trajectories.start(agent={"name": "claude-code"}).session_id
    with store.hook_events.transaction(sid) as tx:
        tx.put("tool:1", "tool", {"cmd": "ls"})
        tx.put("stop", "stop", {"count": 1})
        tx.put("tool:1", "tool", {"cmd": "ls -la"})  # replaced in place, keeps its first position
    with store.hook_events.transaction(sid) as tx:
        items = tx.items()
        assert items == [("tool:1", "tool", {"cmd": "ls -la"}), ("stop", "stop", {"count": 1})]
        assert isinstance(items[0], PendingEvent) and items[0].data == {"cmd": "ls -la"}
        assert tx.items("stop") == [PendingEvent("stop", "stop", {"count": 1})]
    with pytest.raises(RuntimeError), store.hook_events.transaction(sid) as tx:
        assert tx.pop("tool:1") == {"cmd": "ls -la"}
        tx.append([{"message": "ran ls"}])
        raise RuntimeError("the hook died mid-event")
    assert store.trajectories.get(sid).steps == []  # rolled back: the step and the pop together
    with store.hook_events.transaction(sid) as tx:
        assert tx.get("tool:1") == {"cmd": "ls -la"}
        tx.pop("tool:1")
        first = tx.append([{"message": "ran ls"}])
        second = tx.append([{"message": "and more"}])
        assert [(s.step_id, c) for s, c in first + second] == [(1, True), (2, True)]
        assert tx.pop("nope") is None
    assert [s.message for s in store.trajectories.get(sid).steps] == ["ran ls", "and more"]
    store.trajectories.finish(sid)
    with pytest.raises(StoreError, match="finished"), store.hook_events.transaction(sid) as tx:
        tx.append([{"message": "late"}])
    with pytest.raises(StoreError, match="unknown trajectory"), store.hook_events.transaction("traj_nope"):
        pass

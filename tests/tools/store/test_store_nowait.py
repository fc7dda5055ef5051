"""``log_steps(nowait=True)``: the MCP adapter's first try on its event loop. On SQLite it writes exactly
what the waiting call writes, and fails at once (``WouldWait``, nothing written, the busy timeout kept)
when another connection holds the write lock; on PostgreSQL it always hands the write to a thread. The
adapter then falls back to its worker thread, so a contended call still succeeds."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time

import anyio
import pytest
from sqlalchemy import select

from agent_rl_sandbox.tools.errors import WouldWait
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.store._schema import steps as steps_table


def _step(i: int) -> dict:
    return {"message": f"step {i} AKIAIOSFODNN7EXAMPLE", "client_step_id": f"c{i}", "provenance": "agent"}


def _rows(store: Store, sid: str) -> list[tuple]:
    with store.engine.connect() as conn:
        got = conn.execute(
            select(steps_table.c.step_id, steps_table.c.client_step_id, steps_table.c.data_json)
            .where(steps_table.c.session_id == sid)
            .order_by(steps_table.c.step_id)
        ).all()
    out = []
    for step_id, cid, data in got:
        d = json.loads(data)
        d.pop("timestamp")
        out.append((step_id, cid, d))
    return out


def test_nowait_writes_what_the_waiting_call_writes(store):
    t = store.trajectories
    a, b = t.start(agent={"name": "a"}), t.start(agent={"name": "a"})
    if not t.writes_without_waiting:  # PostgreSQL: always to the thread, before any work
        with pytest.raises(WouldWait):
            t.log_steps(a.session_id, [_step(1)], nowait=True)
        assert _rows(store, a.session_id) == []
        return
    for batch in ([_step(1)], [_step(1), _step(2)], [_step(3), {"message": "no id"}, _step(3)]):
        ra = t.log_steps(a.session_id, batch)
        rb = t.log_steps(b.session_id, batch, nowait=True)
        assert ra.created == rb.created and ra.redactions == rb.redactions
        assert [s.step_id for s in ra.steps] == [s.step_id for s in rb.steps]
    assert _rows(store, a.session_id) == _rows(store, b.session_id)
    assert t.get(b.session_id).step_count == t.get(a.session_id).step_count == 4


def test_nowait_fails_at_once_on_a_held_write_lock(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)
    try:
        t = store.trajectories
        sid = t.start(agent={"name": "a"}).session_id
        other = sqlite3.connect(tmp_path / "store.db", isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another writer (a hook command, a second server) holds the lock
        t0 = time.monotonic()
        with pytest.raises(WouldWait):
            t.log_steps(sid, [_step(1)], nowait=True)
        assert time.monotonic() - t0 < 1.0  # no busy wait (the default is 30 s)
        # The waiting call still waits for the lock (the busy timeout was restored), then writes.
        threading.Timer(0.3, other.rollback).start()
        res = t.log_steps(sid, [_step(1)])
        assert res.created == [True] and [s.step_id for s in t.get(sid).steps] == [1]
        other.close()
    finally:
        store.close()


def test_mcp_call_falls_back_to_the_thread_when_the_lock_is_held(settings):
    from mcp import Client

    from agent_rl_sandbox.server.app import build_server

    server = build_server(settings)
    db = settings.db_url.removeprefix("sqlite:///")

    async def main() -> None:
        async with Client(server) as client:
            sid = (await client.call_tool("trajectory_start", {"agent_name": "a"})).structured_content["trajectory"][
                "session_id"
            ]
            fast = await client.call_tool("trajectory_log_step", {"session_id": sid, "step": {"message": "x"}})
            assert not fast.is_error and fast.structured_content["steps"][0]["step_id"] == 1
            other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
            other.execute("BEGIN IMMEDIATE")
            threading.Timer(0.3, other.rollback).start()
            t0 = time.monotonic()
            slow = await client.call_tool(
                "trajectory_log_step", {"session_id": sid, "step": {"message": "y", "client_step_id": "k"}}
            )
            assert time.monotonic() - t0 >= 0.25  # it waited for the lock, in the worker thread
            assert not slow.is_error and slow.structured_content["steps"][0]["step_id"] == 2
            other.close()
            again = await client.call_tool(
                "trajectory_log_step", {"session_id": sid, "step": {"message": "y", "client_step_id": "k"}}
            )
            assert again.structured_content["steps"][0] == {"step_id": 2, "client_step_id": "k", "created": False}

    try:
        anyio.run(main)
    finally:
        server.services.close()  # type: ignore[attr-defined]


def test_single_step_retry_through_the_folded_insert(store):
    # One step with a client id takes INSERT ... ON CONFLICT DO NOTHING RETURNING on SQLite: a retry
    # still returns the stored step (not the retried text), adds nothing, and keeps the count.
    t = store.trajectories
    sid = t.start(agent={"name": "a"}).session_id
    first = t.log_steps(sid, [_step(1)])
    again = t.log_steps(sid, [{**_step(1), "message": "different text"}])
    assert first.created == [True] and again.created == [False]
    assert again.steps[0].step_id == 1 and again.steps[0].message == first.steps[0].message
    assert again.step_count == 1 and t.get(sid).step_count == 1
    nxt = t.log_steps(sid, [_step(2)])
    assert nxt.steps[0].step_id == 2 and nxt.step_count == 2
    t.finish(sid)
    assert t.log_steps(sid, [_step(2)]).created == [False]  # a retry after finishing still answers
    assert [s.step_id for s in t.get(sid).steps] == [1, 2]


def _outcome(fn):
    """``("ok", AppendResult)`` or ``("error", type, text)`` of one call."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the test compares what each path raises
        return ("error", type(e).__name__, re.sub(r"traj_[0-9a-f]+", "<id>", str(e)))


def test_nowait_path_answers_and_refuses_as_the_waiting_path(store):
    # On SQLite nowait runs plain DB-API statements on its own connection (_sqlite_direct); every
    # outcome must match the SQLAlchemy path's: unknown id, finished trajectory, retries after finish,
    # repeats inside a batch, malformed steps, and the stored rows.
    t = store.trajectories
    if not t.writes_without_waiting:
        pytest.skip("PostgreSQL: nowait always hands the write to a thread (test above)")
    a, b = t.start(agent={"name": "a"}).session_id, t.start(agent={"name": "a"}).session_id
    calls = [
        [_step(1)],
        [_step(1)],  # a retry: the stored step, nothing added
        [{"message": "no client id"}],
        [_step(2), _step(2), _step(1), {"message": "x"}],  # a repeat inside the batch, a retry, a new one
        [{"message": "bad", "tool_calls": [{"tool_call_id": "k", "function_name": "f"}] * 2}],  # malformed
    ]
    for batch in calls:
        ra = _outcome(lambda batch=batch: t.log_steps(a, batch))
        rb = _outcome(lambda batch=batch: t.log_steps(b, batch, nowait=True))
        assert ra[0] == rb[0], (ra, rb)
        if ra[0] == "ok":
            x, y = ra[1], rb[1]
            assert (x.created, x.step_count, x.redactions) == (y.created, y.step_count, y.redactions)
            assert [s.model_dump(exclude={"timestamp"}) for s in x.steps] == [
                s.model_dump(exclude={"timestamp"}) for s in y.steps
            ]
        else:
            assert ra[1:] == rb[1:]
    assert _rows(store, a) == _rows(store, b)
    t.finish(a)
    t.finish(b)
    for batch in ([_step(1)], [_step(9)], [_step(1), _step(9)]):  # retry after finish; new steps refused
        ra = _outcome(lambda batch=batch: t.log_steps(a, batch))
        rb = _outcome(lambda batch=batch: t.log_steps(b, batch, nowait=True))
        assert ra[0] == rb[0] and (ra[0] == "ok" or ra[1:] == rb[1:]), (ra, rb)
    assert _rows(store, a) == _rows(store, b)
    unknown = [_outcome(lambda nw=nw: t.log_steps("traj_missing", [_step(1)], nowait=nw)) for nw in (False, True)]
    assert unknown[0] == unknown[1] and unknown[0][0] == "error"
    assert [_outcome(lambda nw=nw: t.owner(a, nowait=nw)) for nw in (False, True)] == [("ok", None)] * 2
    missing = [_outcome(lambda nw=nw: t.owner("traj_missing", nowait=nw)) for nw in (False, True)]
    assert missing[0] == missing[1] and missing[0][0] == "error"


def test_nowait_path_never_waits_for_another_thread(store):
    t = store.trajectories
    if not t.writes_without_waiting:
        pytest.skip("SQLite only")
    sid = t.start(agent={"name": "a"}).session_id
    t.log_steps(sid, [_step(1)], nowait=True)  # opens the direct connection
    direct = t._direct
    assert direct is not None
    with direct._lock:  # another thread is mid-call on the direct connection
        with pytest.raises(WouldWait):
            t.log_steps(sid, [_step(2)], nowait=True)
        with pytest.raises(WouldWait):
            t.owner(sid, nowait=True)
    assert [s.step_id for s in t.get(sid).steps] == [1]  # nothing written by the refused call
    assert t.log_steps(sid, [_step(2)], nowait=True).created == [True]
    store.close()  # closes the direct connection too; a later use reopens it
    assert direct._conn is None


class _Busy:
    """A direct connection whose statements starting with ``fail_on`` answer "database is locked" (what a
    reader gets during WAL recovery or from a connection in exclusive locking mode)."""

    def __init__(self, conn: sqlite3.Connection, fail_on: str):
        self.conn, self.fail_on = conn, fail_on

    def execute(self, sql: str, *args):
        if sql.startswith(self.fail_on):
            raise sqlite3.OperationalError("database is locked")
        return self.conn.execute(sql, *args)

    def executemany(self, sql: str, rows):
        return self.conn.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction


def test_nowait_gives_way_when_sqlite_answers_busy(store):
    # With busy_timeout=0 any statement may answer "locked": the nowait path must hand over (WouldWait,
    # nothing written, the transaction rolled back), never fail the call.
    t = store.trajectories
    if not t.writes_without_waiting:
        pytest.skip("SQLite only")
    sid = t.start(agent={"name": "a"}).session_id
    t.log_steps(sid, [_step(1)], nowait=True)
    direct = t._direct
    assert direct is not None and direct._conn is not None
    real = direct._conn
    for fail_on, call in (
        ("SELECT owner", lambda: t.owner(sid, nowait=True)),
        ("SELECT status", lambda: t.log_steps(sid, [_step(2)], nowait=True)),
        ("COMMIT", lambda: t.log_steps(sid, [_step(2)], nowait=True)),
    ):
        direct._conn = _Busy(real, fail_on)  # type: ignore[assignment]
        try:
            with pytest.raises(WouldWait):
                call()
        finally:
            direct._conn = real
        assert not real.in_transaction
        assert [s.step_id for s in t.get(sid).steps] == [1]
    assert t.log_steps(sid, [_step(2)], nowait=True).created == [True]
    assert [s.step_id for s in t.get(sid).steps] == [1, 2]


@pytest.mark.parametrize("nowait", [False, True])
def test_owner_check_refuses_before_anything_is_written(store, nowait):
    """``log_steps(owner_check=...)`` hands the check the stored owner (on SQLite from the row the write
    transaction reads) and writes nothing when it raises; its refusal comes before a step's own error."""
    t = store.trajectories
    sid = t.start(agent={"name": "a"}, owner="alice").session_id
    if nowait and not t.writes_without_waiting:
        pytest.skip("PostgreSQL: nowait always hands the write to a thread")
    seen: list[str | None] = []

    def refuse(owner: str | None) -> None:
        seen.append(owner)
        raise PermissionError("not yours")

    bad = {"message": "x", "tool_calls": [{"tool_call_id": "c", "function_name": "f"}] * 2}  # duplicate call ids
    for batch in ([_step(1)], [_step(1), _step(2)], [bad]):
        with pytest.raises(PermissionError):
            t.log_steps(sid, batch, nowait=nowait, owner_check=refuse)
    assert seen == ["alice"] * 3
    assert _rows(store, sid) == [] and t.get(sid).step_count == 0
    res = t.log_steps(sid, [_step(1)], nowait=nowait, owner_check=seen.append)
    assert res.created == [True] and seen[-1] == "alice" and len(_rows(store, sid)) == 1

"""Many writers at once, and writers killed mid-batch, on SQLite and PostgreSQL.

Acceptance: 16 processes logging 2,000 steps each into one trajectory concurrently lose and duplicate
nothing (step ids stay dense, every client step id is stored exactly once, each writer's steps keep their
order), including retried batches; a writer killed with SIGKILL mid-batch leaves every committed batch
readable and no partial step or batch. Steps go in batches of ``BATCH`` per call (one transaction each):
16 x 2,000 single-step transactions on one SQLite file on 2 cores take minutes (busy-wait backoff on the
write lock), batches of 50 take seconds on both backends; ``bench/trajectories.py`` measures single calls.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import time

import pytest
from sqlalchemy import func, select

from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.store._schema import steps as steps_table

WRITERS = 16
STEPS_PER_WRITER = 2000
BATCH = 50
RETRY_EVERY = 10
"""Every 10th batch is sent a second time (a client retry after a lost reply)."""


def _writer(url: str, sid: str, w: int, ready, go) -> None:
    store = Store(url)
    ready.wait()
    go.wait()
    batches = [
        [
            {
                "message": f"w{w} i{i}",
                "client_step_id": f"w{w}-{i}",
                "provenance": "agent",
                "extra": {"writer": w, "i": i},
            }
            for i in range(b, b + BATCH)
        ]
        for b in range(0, STEPS_PER_WRITER, BATCH)
    ]
    for k, batch in enumerate(batches):
        res = store.trajectories.log_steps(sid, batch)
        assert all(res.created), "a fresh batch was reported as a retry"
        if k % RETRY_EVERY == 0:
            again = store.trajectories.log_steps(sid, batch)
            assert not any(again.created) and [s.step_id for s in again.steps] == [s.step_id for s in res.steps]
    store.close()


@pytest.mark.slow
def test_16_writers_2000_steps_each_lose_and_duplicate_nothing(store_url, request):
    store = Store(store_url)
    sid = store.trajectories.start(agent={"name": "load"}).session_id
    store.engine.dispose()  # no open connections cross the fork
    ctx = mp.get_context("fork")
    ready, go = ctx.Barrier(WRITERS + 1), ctx.Barrier(WRITERS + 1)
    procs = [ctx.Process(target=_writer, args=(store_url, sid, w, ready, go)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    ready.wait(timeout=60)
    t0 = time.perf_counter()
    go.wait(timeout=60)
    for p in procs:
        p.join(timeout=300)
    elapsed = time.perf_counter() - t0
    assert [p.exitcode for p in procs] == [0] * WRITERS
    total = WRITERS * STEPS_PER_WRITER
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(steps_table.c.step_id, steps_table.c.client_step_id, steps_table.c.data_json)
            .where(steps_table.c.session_id == sid)
            .order_by(steps_table.c.step_id)
        ).all()
    assert [r.step_id for r in rows] == list(range(1, total + 1))  # dense: nothing lost, nothing doubled
    assert len({r.client_step_id for r in rows}) == total
    assert {r.client_step_id for r in rows} == {f"w{w}-{i}" for w in range(WRITERS) for i in range(STEPS_PER_WRITER)}
    order: dict[int, list[int]] = {}
    for r in rows:
        d = json.loads(r.data_json)
        order.setdefault(d["extra"]["writer"], []).append(d["extra"]["i"])
    assert all(v == list(range(STEPS_PER_WRITER)) for v in order.values())
    assert store.trajectories.summary(sid).step_count == total
    store.close()
    backend = store_url.split(":", 1)[0]
    print(
        f"\n[{backend}] {WRITERS} writers x {STEPS_PER_WRITER} steps (batches of {BATCH}, every "
        f"{RETRY_EVERY}th retried): {elapsed:.1f} s, {total / elapsed:,.0f} steps/s"
    )
    request.node.user_properties.append(("elapsed_s", round(elapsed, 2)))
    assert elapsed < 60


def _killable_writer(url: str, sid: str, conn, payload: int) -> None:
    """Log batches forever; after each commit, report the batch number on the pipe."""
    store = Store(url)
    blob = "x" * payload
    b = 0
    while True:
        batch = [
            {
                "message": f"b{b} s{j}",
                "client_step_id": f"b{b}-{j}",
                "provenance": "agent",
                "observation": {"results": [{"content": blob}]},
                "extra": {"batch": b, "j": j},
            }
            for j in range(BATCH)
        ]
        store.trajectories.log_steps(sid, batch)
        conn.send(b)
        b += 1


@pytest.mark.slow
def test_sigkill_mid_batch_leaves_committed_steps_and_no_partial_batch(store_url):
    store = Store(store_url)
    sid = store.trajectories.start(agent={"name": "victim"}).session_id
    store.engine.dispose()
    ctx = mp.get_context("fork")
    rng = random.Random(5)
    for _round in range(3):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_killable_writer, args=(store_url, sid, child, 4096))
        p.start()
        committed: list[int] = []
        deadline = time.time() + 60
        while len(committed) < 3 and time.time() < deadline:
            if parent.poll(0.1):
                committed.append(parent.recv())
        time.sleep(rng.uniform(0.0, 0.05))  # land somewhere inside the next batch
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        while parent.poll(0):
            committed.append(parent.recv())
        assert p.exitcode == -signal.SIGKILL and committed
        got = Store(store_url)
        traj = got.trajectories.get(sid)
        n = len(traj.steps)
        assert n % BATCH == 0, f"a partial batch is visible: {n} steps"
        assert [s.step_id for s in traj.steps] == list(range(1, n + 1))
        seen = {(s.extra["batch"], s.extra["j"]) for s in traj.steps}
        for b in committed:  # every batch the writer saw commit is there, whole
            assert all((b, j) in seen for j in range(BATCH))
        assert all(len(s.observation.results[0].content) == 4096 for s in traj.steps)
        with got.engine.connect() as conn:
            count = conn.execute(select(func.count()).where(steps_table.c.session_id == sid)).scalar_one()
        assert count == n
        # The store is still writable (SQLite's WAL recovered, PostgreSQL released the row lock), and the
        # next round (batch numbering restarts) writes a fresh trajectory.
        after = got.trajectories.log_steps(sid, [{"message": "after the kill", "provenance": "agent"}])
        assert after.steps[0].step_id == n + 1
        sid = got.trajectories.start(agent={"name": "victim"}).session_id
        got.close()

"""The trajectory store on SQLite and PostgreSQL: idempotent appends, immutability, integrity, redaction,
listing filters, concurrent session lookup and migration from the first schema."""

from __future__ import annotations

import json
import threading
import time

import pytest
from pydantic import ValidationError
from sqlalchemy import Boolean, Column, Float, ForeignKey, Integer, MetaData, String, Table, Text, create_engine, select

from agent_rl_sandbox.tools.store import StepsChanged, Store, StoreError
from agent_rl_sandbox.tools.store._schema import steps as steps_table

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def _step(i: int, **kw) -> dict:
    return {"message": f"step {i}", "client_step_id": f"c{i}", "provenance": "agent", **kw}


def test_idempotent_retries(store):
    t = store.trajectories.start(agent={"name": "a"})
    first = store.trajectories.log_steps(t.session_id, [_step(1), _step(2), _step(3)])
    assert [s.step_id for s in first.steps] == [1, 2, 3] and all(first.created)
    # The whole batch again (a retried call): nothing new, same steps back.
    again = store.trajectories.log_steps(t.session_id, [_step(1), _step(2), _step(3)])
    assert [s.step_id for s in again.steps] == [1, 2, 3] and not any(again.created)
    assert [s.message for s in again.steps] == ["step 1", "step 2", "step 3"]
    # A retry that overlaps new work: only the new steps are appended, in order.
    mixed = store.trajectories.log_steps(t.session_id, [_step(3), _step(4), {"message": "no key"}, _step(4)])
    assert [s.step_id for s in mixed.steps] == [3, 4, 5, 4]
    assert mixed.created == [False, True, True, False]
    got = store.trajectories.get(t.session_id)
    assert [s.step_id for s in got.steps] == [1, 2, 3, 4, 5]
    assert got.step_count == 5


def test_finished_is_immutable_and_corrections_reference_it(store):
    t = store.trajectories.start(agent={"name": "a"}, task_id="t1")
    store.trajectories.log_steps(t.session_id, [_step(1)])
    store.trajectories.finish(t.session_id, final_message="done")
    with pytest.raises(StoreError, match="finished and immutable"):
        store.trajectories.log_steps(t.session_id, [_step(2)])
    # A retry of an already stored step after finishing still answers (idempotent), adding nothing.
    retry = store.trajectories.log_steps(t.session_id, [_step(1)])
    assert retry.created == [False]
    with pytest.raises(StoreError, match="already finished"):
        store.trajectories.finish(t.session_id)
    fix = store.trajectories.start(agent={"name": "a"}, task_id="t1", parent_session_id=t.session_id)
    assert fix.parent_session_id == t.session_id
    with pytest.raises(StoreError, match="unknown trajectory"):
        store.trajectories.start(parent_session_id="traj_nope")
    assert store.trajectories.get(t.session_id).step_count == 1


@pytest.mark.parametrize(
    "bad, why",
    [
        (
            {"tool_calls": [{"tool_call_id": "x", "function_name": "f"}, {"tool_call_id": "x", "function_name": "g"}]},
            "duplicate tool_call_id",
        ),
        (
            {
                "tool_calls": [{"tool_call_id": "x", "function_name": "f"}],
                "observation": {"results": [{"source_call_id": "y", "content": "?"}]},
            },
            "not a tool call of this step",
        ),
    ],
)
def test_malformed_steps_are_rejected_whole_batch(store, bad, why):
    t = store.trajectories.start()
    with pytest.raises(StoreError, match=why):
        store.trajectories.log_steps(t.session_id, [_step(1), {"message": "bad", **bad}])
    with pytest.raises(ValidationError):
        store.trajectories.log_steps(t.session_id, [_step(1), {"message": "bad", "outcome": "bogus"}])
    assert store.trajectories.get(t.session_id).steps == []


def test_secrets_never_reach_the_store(store):
    t = store.trajectories.start()
    res = store.trajectories.log_steps(
        t.session_id,
        [
            {
                "message": f"export AWS_ACCESS_KEY_ID={AWS_KEY}",
                "tool_calls": [
                    {
                        "tool_call_id": "c",
                        "function_name": "Bash",
                        "arguments": {"command": "git clone https://bob:hunter2pass@example.com/r.git"},
                    }
                ],
                "observation": {
                    "results": [
                        {
                            "source_call_id": "c",
                            "content": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
                        }
                    ]
                },
            }
        ],
    )
    assert res.redactions == {"aws-access-key": 1, "basic-auth-credentials": 1, "private-key": 1}
    store.trajectories.finish(t.session_id, final_message=f"key {AWS_KEY}")
    with store.engine.connect() as conn:
        blobs = " ".join(conn.execute(select(steps_table.c.data_json)).scalars())
    got = store.trajectories.get(t.session_id)
    for secret in (AWS_KEY, "hunter2pass", "b3Blbn"):
        assert secret not in blobs and secret not in (got.final_message or "")
    assert "[REDACTED:aws-access-key]" in got.steps[0].message
    assert "bob:[REDACTED:basic-auth-credentials]@example.com" in json.dumps(got.steps[0].tool_calls[0].arguments)


def test_list_filters_time_and_pages(store):
    ids = {}
    for name, task, behaviour, passed in [
        ("p1", "t1", "b1", True),
        ("f1", "t1", "b1", False),
        ("u1", "t2", "b2", None),
        ("r1", "t2", "b2", "running"),
    ]:
        t = store.trajectories.start(
            agent={"name": f"agent-{name[0]}"}, task_id=task, behaviour=behaviour, split="train"
        )
        ids[name] = t.session_id
        if passed != "running":
            store.trajectories.finish(t.session_id, reward=None if passed is None else float(passed), passed=passed)
        time.sleep(0.002)
    mid = store.trajectories.summary(ids["u1"]).created_at

    def sids(**f):
        rows, total = store.trajectories.list(**f)
        assert total == len(rows)
        return {s.session_id for s in rows}

    assert sids(outcome="passed") == {ids["p1"]}
    assert sids(outcome="failed") == {ids["f1"]}
    assert sids(outcome="unscored") == {ids["u1"]}
    assert sids(outcome="running") == {ids["r1"]}
    assert sids(task_id="t1") == {ids["p1"], ids["f1"]}
    assert sids(behaviour="b2", agent_name="agent-r") == {ids["r1"]}
    assert sids(created_after=mid) == {ids["u1"], ids["r1"]}
    assert sids(created_before=mid) == {ids["p1"], ids["f1"]}
    assert sids(created_after="2000-01-01", created_before="2000-01-02") == set()
    page1, total = store.trajectories.list(limit=3)
    page2, _ = store.trajectories.list(limit=3, offset=3)
    assert total == 4 and len(page1) == 3 and len(page2) == 1
    assert [s.session_id for s in page1 + page2] == [ids["r1"], ids["u1"], ids["f1"], ids["p1"]]  # newest first
    with pytest.raises(StoreError):
        store.trajectories.list(outcome="bogus")


def test_client_session_maps_to_one_trajectory_under_concurrency(store_url):
    stores = [Store(store_url) for _ in range(8)]
    out: list[tuple[str, bool]] = []
    barrier = threading.Barrier(len(stores))

    def go(s: Store) -> None:
        barrier.wait()
        summary, created = s.trajectories.start_or_resume_external(
            "claude-code:abc", agent={"name": "claude-code"}, origin="hook:claude-code"
        )
        out.append((summary.session_id, created))

    threads = [threading.Thread(target=go, args=(s,)) for s in stores]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len({sid for sid, _ in out}) == 1
    assert sum(created for _, created in out) == 1
    first = out[0][0]
    stores[0].trajectories.finish(first)
    # A late event of the ended session (reopen=False) gets the finished one back, opens nothing.
    late, created = stores[0].trajectories.start_or_resume_external("claude-code:abc", reopen=False)
    assert not created and late.session_id == first and late.status == "finished"
    again, created = stores[0].trajectories.start_or_resume_external("claude-code:abc")
    assert created and again.parent_session_id == first
    for s in stores:
        s.close()


def _v1_metadata() -> MetaData:
    """The first release's tables (before ``ars_meta``, ``hook_pending`` and the v2 columns)."""
    md = MetaData()
    Table(
        "trajectories",
        md,
        Column("session_id", String(64), primary_key=True),
        Column("agent_json", Text, nullable=False),
        Column("task_id", String(200)),
        Column("behaviour", String(100)),
        Column("split", String(16)),
        Column("sandbox_id", String(64)),
        Column("status", String(16), nullable=False),
        Column("created_at", String(40), nullable=False),
        Column("finished_at", String(40)),
        Column("step_count", Integer, nullable=False),
        Column("reward", Float),
        Column("passed", Boolean),
        Column("self_report_only", Boolean),
        Column("final_message", Text),
        Column("parent_session_id", String(64)),
        Column("reward_components_json", Text),
        Column("score_json", Text),
    )
    Table(
        "steps",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("session_id", String(64), ForeignKey("trajectories.session_id"), nullable=False),
        Column("step_id", Integer, nullable=False),
        Column("client_step_id", String(200)),
        Column("provenance", String(16), nullable=False),
        Column("data_json", Text, nullable=False),
    )
    return md


def test_migrates_a_first_release_store(store_url):
    md = _v1_metadata()
    engine = create_engine(store_url)
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            md.tables["trajectories"]
            .insert()
            .values(
                session_id="traj_old",
                agent_json='{"name": "old-agent"}',
                status="finished",
                created_at="2026-01-01T00:00:00.000000Z",
                step_count=1,
                sandbox_id="sbx_1",
                passed=True,
                reward=1.0,
            )
        )
        conn.execute(
            md.tables["steps"]
            .insert()
            .values(
                session_id="traj_old",
                step_id=1,
                provenance="server",
                data_json='{"step_id": 1, "timestamp": "2026-01-01T00:00:00Z", "message": "hi", "provenance": "server"}',
            )
        )
    engine.dispose()
    s = Store(store_url)
    rows, total = s.trajectories.list(agent_name="old-agent")
    assert total == 1 and rows[0].origin == "sandbox"
    assert s.trajectories.get("traj_old").steps[0].message == "hi"
    t = s.trajectories.start(agent={"name": "new"})
    assert s.trajectories.log_steps(t.session_id, [{"message": "x"}]).steps[0].step_id == 1
    s.close()
    Store(store_url).close()  # a second open finds the current version and does nothing


def test_reopening_a_current_store_is_cheap(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    Store(url).close()
    t0 = time.perf_counter()
    for _ in range(5):
        Store(url).close()
    per_open = (time.perf_counter() - t0) / 5
    assert per_open < 0.05, per_open


def test_concurrent_retries_of_one_batch_store_it_once(store_url):
    """Eight clients send the same batch at once (a retry storm): each step is stored exactly once and
    every caller gets the same step ids back."""
    stores = [Store(store_url) for _ in range(8)]
    sid = stores[0].trajectories.start().session_id
    batch = [_step(i) for i in range(50)]
    barrier = threading.Barrier(len(stores))
    results: list[list[int]] = []

    def go(s: Store) -> None:
        barrier.wait()
        results.append([st.step_id for st in s.trajectories.log_steps(sid, batch).steps])

    threads = [threading.Thread(target=go, args=(s,)) for s in stores]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 8 and all(r == list(range(1, 51)) for r in results)
    assert stores[0].trajectories.get(sid).step_count == 50
    for s in stores:
        s.close()


def _server_step(i: int) -> dict:
    """A step as the sandbox service records it (server provenance, no client step id)."""
    return {"message": f"server step {i}", "provenance": "server", "outcome": "ok", "extra": {"event": "exec"}}


def test_no_step_of_any_provenance_lands_on_a_finished_trajectory(store):
    t = store.trajectories.start(agent={"name": "a"}, task_id="t1")
    store.trajectories.log_steps(t.session_id, [_server_step(1)])
    store.trajectories.finish(t.session_id, final_message="done", reward=1.0, passed=True, steps_scored=1)
    tries = [lambda s: store.trajectories.log_steps(t.session_id, [s])]
    if store.trajectories.writes_without_waiting:  # SQLite: the event loop's direct DB-API path too
        tries.append(lambda s: store.trajectories.log_steps(t.session_id, [s], nowait=True))
    for attempt in tries:
        for step in (_server_step(2), {**_server_step(3), "client_step_id": "late-1"}, _step(4)):
            with pytest.raises(StoreError, match="finished and immutable"):
                attempt(step)
    got = store.trajectories.get(t.session_id)
    assert got.step_count == 1 and [s.message for s in got.steps] == ["server step 1"] and got.reward == 1.0


def test_finish_refuses_a_score_that_did_not_read_every_stored_step(store):
    """A step recorded between reading the steps and closing the trajectory (a race against another
    server process): the close is refused inside its transaction and nothing is written."""
    t = store.trajectories.start(agent={"name": "a"}, task_id="t1")
    store.trajectories.log_steps(t.session_id, [_server_step(1), _server_step(2)])
    scored = len(store.trajectories.get(t.session_id).steps)
    store.trajectories.log_steps(t.session_id, [_server_step(3)])  # lands after the score read the steps
    with pytest.raises(StepsChanged, match="has 3 steps but its score read 2") as e:
        store.trajectories.finish(t.session_id, final_message="done", reward=1.0, passed=True, steps_scored=scored)
    assert (e.value.scored, e.value.stored) == (2, 3)
    summary = store.trajectories.summary(t.session_id)
    assert summary.status == "running" and summary.reward is None
    store.trajectories.log_steps(t.session_id, [_server_step(4)])  # still open for steps
    done = store.trajectories.finish(t.session_id, final_message="done", reward=0.0, passed=False, steps_scored=4)
    assert done.status == "finished" and done.reward == 0.0

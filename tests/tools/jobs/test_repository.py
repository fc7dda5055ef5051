"""The jobs repository on SQLite and PostgreSQL: atomic conditional transitions with one event each,
racing approvals (one wins), expiry, the worker's claims (SQLite lock row, PostgreSQL SKIP LOCKED),
heartbeats, lost-worker recovery and the spec_changed check at claim time."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import update

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.tools.jobs import JobRepository, TransitionRefused, canonical_spec, later, spec_hash
from agent_rl_sandbox.tools.store import Store, StoreError, utcnow
from agent_rl_sandbox.tools.store._schema import jobs as jobs_table

SPEC = {
    "route": "sft",
    "trainer": "sft",
    "base_model": "/models/tiny",
    "dataset": {"kind": "file", "path": "/data/sft.jsonl"},
    "gate": {"behaviour": "claim-before-edit"},
    "reason": "teach claiming",
}


@pytest.fixture
def repo(store: Store) -> JobRepository:
    return JobRepository(store.engine)


def _add(repo: JobRepository, *, expires_in: float = 3600, requester: str = "agent-a", **spec_changes):
    canon = canonical_spec(JobSpec.model_validate({**SPEC, **spec_changes}), cwd=Path("/"), dataset_sha256="b" * 64)
    return repo.add(
        requester=requester, spec=canon, spec_hash=spec_hash(canon), expires_at=later(expires_in),
        trainer=canon["trainer"], behaviour=canon["gate"]["behaviour"], validation={"ok": True},
    )  # fmt: skip


def _approve_and_queue(repo: JobRepository, job_id: str) -> None:
    job = repo.get(job_id)
    repo.transition(job_id, "approved", "human", "ok", expect_from="awaiting_approval", who="alice",
                    approved_hash=job.spec_hash, decided_by="alice", decided_at=utcnow())  # fmt: skip
    repo.transition(job_id, "queued", "system", "approved jobs are queued", expect_from="approved")


def test_add_get_list_and_the_creation_event(repo):
    a = _add(repo)
    b = _add(repo, requester="agent-b")
    assert a.state == "awaiting_approval" and a.requester == "agent-a" and a.validation == {"ok": True}
    assert a.spec["dataset"]["sha256"] == "b" * 64 and a.spec_hash == spec_hash(a.spec)
    assert repo.get(a.job_id) == a
    page, total = repo.list()
    assert total == 2 and {j.job_id for j in page} == {a.job_id, b.job_id}
    page, total = repo.list(requester="agent-b")
    assert total == 1 and page[0].job_id == b.job_id
    page, total = repo.list(limit=1, offset=1)
    assert total == 2 and len(page) == 1
    assert repo.list(states=["running"]) == ([], 0)
    (ev,) = repo.events(a.job_id)
    assert (ev.actor, ev.who, ev.from_state, ev.to_state) == ("agent", "agent-a", None, "awaiting_approval")
    with pytest.raises(StoreError, match="unknown job"):
        repo.get("job_nope")


def test_every_transition_appends_one_event_and_final_states_close(repo):
    j = _add(repo)
    _approve_and_queue(repo, j.job_id)
    claimed = repo.claim("w1", 60)
    assert claimed is not None and claimed.job_id == j.job_id and claimed.state == "running"
    assert claimed.worker_id == "w1" and claimed.lease_expires_at > utcnow() and claimed.started_at
    repo.transition(j.job_id, "succeeded", "worker", "trained", expect_from="running", who="w1")
    repo.transition(j.job_id, "evaluating", "worker", "post eval", expect_from="succeeded", who="w1")
    done = repo.transition(j.job_id, "gate_passed", "worker", "gate ok", expect_from="evaluating", who="w1")
    assert done.final and done.finished_at and done.lease_expires_at is None
    steps = [(e.from_state, e.to_state, e.actor) for e in repo.events(j.job_id)]
    assert steps == [
        (None, "awaiting_approval", "agent"),
        ("awaiting_approval", "approved", "human"),
        ("approved", "queued", "system"),
        ("queued", "running", "worker"),
        ("running", "succeeded", "worker"),
        ("succeeded", "evaluating", "worker"),
        ("evaluating", "gate_passed", "worker"),
    ]
    with pytest.raises(TransitionRefused):
        repo.transition(j.job_id, "cancelled", "human", "too late", expect_from="gate_passed")


@pytest.mark.parametrize(
    ("src", "dst", "actor"),
    [
        ("awaiting_approval", "approved", "agent"),
        ("awaiting_approval", "queued", "human"),
        ("awaiting_approval", "running", "worker"),
        ("awaiting_approval", "rejected", "agent"),
        ("awaiting_approval", "expired", "agent"),
    ],
)
def test_the_state_machine_refuses_actors_before_touching_the_database(repo, src, dst, actor):
    j = _add(repo)
    with pytest.raises(TransitionRefused):
        repo.transition(j.job_id, dst, actor, "hostile", expect_from=src)
    assert repo.get(j.job_id).state == "awaiting_approval" and len(repo.events(j.job_id)) == 1


def test_a_stale_expected_state_is_refused_and_writes_nothing(repo):
    j = _add(repo)
    repo.transition(j.job_id, "rejected", "human", "no", expect_from="awaiting_approval")
    with pytest.raises(TransitionRefused, match="is rejected, not awaiting_approval") as e:
        repo.transition(j.job_id, "approved", "human", "yes", expect_from="awaiting_approval")
    assert e.value.state == "rejected"
    assert [ev.to_state for ev in repo.events(j.job_id)] == ["awaiting_approval", "rejected"]
    with pytest.raises(StoreError, match="unknown job"):
        repo.transition("job_nope", "approved", "human", "yes", expect_from="awaiting_approval")
    with pytest.raises(ValueError, match="unknown job field"):
        repo.transition(_add(repo).job_id, "cancelled", "human", "x", expect_from="awaiting_approval", state="approved")


def test_racing_approvals_approve_once(store_url):
    stores = [Store(store_url) for _ in range(8)]
    try:
        repos = [JobRepository(s.engine) for s in stores]
        j = _add(repos[0])
        barrier = threading.Barrier(len(repos))
        results: list[str] = []

        def approve(r: JobRepository, n: int) -> None:
            barrier.wait()
            try:
                r.transition(j.job_id, "approved", "human", f"approver {n}", expect_from="awaiting_approval",
                             who=f"h{n}", approved_hash=j.spec_hash)  # fmt: skip
                results.append("won")
            except TransitionRefused:
                results.append("refused")

        threads = [threading.Thread(target=approve, args=(r, n)) for n, r in enumerate(repos)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(results) == ["refused"] * 7 + ["won"]
        assert [e.to_state for e in repos[0].events(j.job_id)] == ["awaiting_approval", "approved"]
    finally:
        for s in stores:
            s.close()


def test_expiry_moves_only_overdue_requests(repo):
    old = _add(repo, expires_in=-1)
    fresh = _add(repo)
    assert repo.expire_due() == [old.job_id]
    assert repo.get(old.job_id).state == "expired" and repo.get(fresh.job_id).state == "awaiting_approval"
    (ev,) = repo.events(old.job_id)[1:]
    assert (ev.actor, ev.from_state, ev.to_state) == ("system", "awaiting_approval", "expired")
    assert repo.expire_due() == []  # idempotent
    with pytest.raises(TransitionRefused):
        repo.transition(old.job_id, "approved", "human", "late", expect_from="awaiting_approval")


def test_claim_takes_queued_jobs_oldest_first_and_nothing_else(repo):
    a, b, c = _add(repo), _add(repo), _add(repo)
    _approve_and_queue(repo, a.job_id)
    _approve_and_queue(repo, b.job_id)
    repo.transition(c.job_id, "approved", "human", "ok", expect_from="awaiting_approval", approved_hash=c.spec_hash)
    first = repo.claim("w1", 60)
    second = repo.claim("w1", 60)
    assert [first.job_id, second.job_id] == [a.job_id, b.job_id]
    assert repo.claim("w1", 60) is None  # c is approved but not queued; the others are running
    assert repo.get(c.job_id).state == "approved"


def test_sqlite_lock_row_keeps_one_worker(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        repo = JobRepository(s.engine)
        a, b = _add(repo), _add(repo)
        _approve_and_queue(repo, a.job_id)
        _approve_and_queue(repo, b.job_id)
        assert repo.claim("w1", 60).job_id == a.job_id
        assert repo.worker_lock()[0] == "w1"
        assert repo.claim("w2", 60) is None  # w1's lease is live
        assert not repo.acquire_worker_lock("w2", 60)
        repo.release_worker_lock("w1")
        assert repo.claim("w2", 60).job_id == b.job_id
        assert repo.worker_lock()[0] == "w2"
    finally:
        s.close()


def test_sqlite_lock_is_taken_over_when_its_lease_expires(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        repo = JobRepository(s.engine)
        assert repo.acquire_worker_lock("w1", -1)  # already expired
        assert repo.acquire_worker_lock("w2", 60)
        assert not repo.acquire_worker_lock("w1", 60)
    finally:
        s.close()


@pytest.mark.postgres
def test_postgres_workers_claim_disjoint_jobs_concurrently(pg_url):
    stores = [Store(pg_url) for _ in range(4)]
    try:
        repos = [JobRepository(s.engine) for s in stores]
        ids = {_add(repos[0]).job_id for _ in range(20)}
        for jid in ids:
            _approve_and_queue(repos[0], jid)
        claimed: list[str] = []
        lock = threading.Lock()

        def work(r: JobRepository, n: int) -> None:
            while (job := r.claim(f"w{n}", 60)) is not None:
                with lock:
                    claimed.append(job.job_id)

        threads = [threading.Thread(target=work, args=(r, n)) for n, r in enumerate(repos)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(claimed) == sorted(ids)  # every job once, none twice
        assert all(repos[0].get(j).state == "running" for j in ids)
        assert repos[0].acquire_worker_lock("anyone", 60)  # no single-worker lock on PostgreSQL
    finally:
        for s in stores:
            s.close()


def test_heartbeat_renews_only_the_holders_active_lease(repo):
    j = _add(repo)
    _approve_and_queue(repo, j.job_id)
    first = repo.claim("w1", 5)
    assert repo.heartbeat(j.job_id, "w1", 600, stage="train", progress=0.5, metrics={"loss": 1.25})
    now = repo.get(j.job_id)
    assert now.lease_expires_at > first.lease_expires_at
    assert (now.stage, now.progress, now.metrics) == ("train", 0.5, {"loss": 1.25})
    assert not repo.heartbeat(j.job_id, "w2", 600)  # not the holder
    repo.transition(j.job_id, "cancelled", "human", "stop", expect_from="running")
    assert not repo.heartbeat(j.job_id, "w1", 600)  # cancelled: the worker must stop
    with pytest.raises(ValueError):
        repo.heartbeat(j.job_id, "w1", 600, state="running")


def test_recover_lost_fails_expired_leases_only(repo):
    lost, alive = _add(repo), _add(repo)
    _approve_and_queue(repo, lost.job_id)
    _approve_and_queue(repo, alive.job_id)
    repo.claim("w1", -1)  # lease already expired: the worker died right after claiming
    repo.release_worker_lock("w1")
    repo.claim("w2", 600)
    assert repo.recover_lost() == [lost.job_id]
    got = repo.get(lost.job_id)
    assert got.state == "failed" and got.reason.startswith("worker_lost") and got.lease_expires_at is None
    assert repo.events(lost.job_id)[-1].actor == "system"
    assert repo.get(alive.job_id).state == "running"
    assert repo.recover_lost() == []
    assert repo.claim("w2", 600) is None  # a failed job is never claimed again


def test_recover_lost_fails_jobs_left_in_succeeded_or_evaluating(repo):
    """A worker killed between ``succeeded`` and ``evaluating`` (or during ``evaluating``) leaves an
    expiring lease on that state: recovery fails those jobs too, and leaves live leases alone."""
    between, evaluating, alive = _add(repo), _add(repo), _add(repo)
    for j in (between, evaluating, alive):
        _approve_and_queue(repo, j.job_id)
    for j, lease in ((between, -1), (evaluating, -1), (alive, 600)):
        got = repo.claim(f"w-{j.job_id}", lease)
        assert got is not None and got.job_id == j.job_id
        repo.release_worker_lock(f"w-{j.job_id}")
        repo.transition(j.job_id, "succeeded", "worker", "trained", expect_from="running")
    repo.transition(evaluating.job_id, "evaluating", "worker", "eval", expect_from="succeeded")
    repo.transition(alive.job_id, "evaluating", "worker", "eval", expect_from="succeeded")
    assert repo.get(between.job_id).lease_expires_at is not None  # the lease carries over to succeeded
    assert sorted(repo.recover_lost()) == sorted([between.job_id, evaluating.job_id])
    for j, src in ((between, "succeeded"), (evaluating, "evaluating")):
        got = repo.get(j.job_id)
        assert got.state == "failed" and got.reason.startswith("worker_lost") and got.lease_expires_at is None
        last = repo.events(j.job_id)[-1]
        assert (last.actor, last.from_state, last.to_state) == ("system", src, "failed")
    assert repo.get(alive.job_id).state == "evaluating"
    assert repo.recover_lost() == []
    with pytest.raises(TransitionRefused):  # only the system recovers a job left in succeeded
        repo.transition(alive.job_id, "failed", "agent", "hostile", expect_from="succeeded")


def test_a_spec_changed_after_approval_fails_at_claim_time(repo, store):
    bad, good = _add(repo), _add(repo)
    _approve_and_queue(repo, bad.job_id)
    _approve_and_queue(repo, good.job_id)
    tampered = dict(bad.spec, base_model="/models/evil")
    import json

    with store.engine.begin() as conn:
        conn.execute(update(jobs_table).where(jobs_table.c.job_id == bad.job_id).values(spec_json=json.dumps(tampered)))
    claimed = repo.claim("w1", 60)
    assert claimed.job_id == good.job_id  # the tampered job is skipped
    got = repo.get(bad.job_id)
    assert got.state == "failed" and got.reason.startswith("spec_changed")
    assert (repo.events(bad.job_id)[-1].from_state, repo.events(bad.job_id)[-1].to_state) == ("queued", "failed")


def test_a_queued_job_without_an_approved_hash_never_runs(repo, store):
    j = _add(repo)
    repo.transition(j.job_id, "approved", "human", "ok", expect_from="awaiting_approval")  # no hash recorded
    repo.transition(j.job_id, "queued", "system", "queue", expect_from="approved")
    assert repo.claim("w1", 60) is None
    assert repo.get(j.job_id).reason.startswith("spec_changed")

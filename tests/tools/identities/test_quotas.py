"""Per-identity quotas: each limit refuses with ``quota exceeded: <limit> is <n>`` and a next step
that says when to retry; the operator is never limited; one identity's use never counts for another."""

from __future__ import annotations

import threading

import pytest

from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.identities import QuotaExceeded, QuotaLimits, Quotas
from agent_rl_sandbox.tools.jobs import JobRepository

A, B = Caller.agent("idn_a"), Caller.agent("idn_b")


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_step_rate_window_and_retry_time(store):
    clock = Clock()
    q = Quotas(QuotaLimits(steps_per_minute=10), store.engine, clock=clock)
    q.steps(A, 6)
    clock.t += 30
    q.steps(A, 4)
    with pytest.raises(QuotaExceeded) as e:
        q.steps(A, 1)
    assert e.value.limit == "steps_per_minute" and e.value.value == 10
    assert e.value.retry_after_s == pytest.approx(30.0)  # when the first 6 leave the window
    assert "quota exceeded: steps_per_minute is 10 for identity idn_a" in e.value.agent_text()
    assert "Next step: retry in 30.0 s" in e.value.agent_text()
    q.steps(B, 10)  # another identity has its own window
    q.steps(OPERATOR, 10_000)  # the operator is never limited
    clock.t += 30.01
    q.steps(A, 6)  # the refused step was not counted; the first batch has left the window
    with pytest.raises(QuotaExceeded) as e:
        q.steps(A, 11)
    assert "split the batch: log at most 10 steps per call" in e.value.agent_text()


def test_running_commands_are_released_even_when_the_command_fails(store):
    q = Quotas(QuotaLimits(running_commands=2, max_exec_seconds=45), store.engine)
    with q.running_command(A), q.running_command(A):
        with pytest.raises(QuotaExceeded, match="running_commands is 2") as e:
            with q.running_command(A):
                pass
        assert e.value.retry_after_s == 45 and "each ends within 45 s" in e.value.agent_text()
        with q.running_command(B):
            pass
    with pytest.raises(RuntimeError):
        with q.running_command(A):
            raise RuntimeError("command crashed")
    with q.running_command(A), q.running_command(A):  # both slots are free again
        pass


def test_running_commands_hold_under_threads(store):
    q = Quotas(QuotaLimits(running_commands=3), store.engine)
    inside, peak, refused = [0], [0], [0]
    lock, gate = threading.Lock(), threading.Barrier(8)

    def worker():
        gate.wait()
        try:
            with q.running_command(A):
                with lock:
                    inside[0] += 1
                    peak[0] = max(peak[0], inside[0])
                threading.Event().wait(0.05)
                with lock:
                    inside[0] -= 1
        except QuotaExceeded:
            with lock:
                refused[0] += 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] <= 3 and refused[0] >= 1


def test_open_sandboxes_and_pending_training_are_counted_in_the_database(store):
    q = Quotas(QuotaLimits(open_sandboxes=1, pending_training=1, job_expiry_hours=72), store.engine)
    traj = store.trajectories.start(owner="idn_a")
    with q.open_sandbox(A):
        store.sandboxes.add(
            sandbox_id="sbx_1", task_id="task", path="/tmp/x", base_commit="c0", status="open", isolation="none",
            session_id=traj.session_id, owner="idn_a",
        )  # fmt: skip
    with pytest.raises(QuotaExceeded, match=r"open_sandboxes is 1 for identity idn_a \(1 open\)"):
        with q.open_sandbox(A):
            pass
    with q.open_sandbox(B):
        pass
    store.sandboxes.update("sbx_1", status="finished")
    with q.open_sandbox(A):
        pass
    repo = JobRepository(store.engine)
    job = repo.add(
        requester="idn_a", spec={}, spec_hash="0" * 64, expires_at="2999-01-01T00:00:00.000000Z",
        trainer="sft", behaviour="b",
    )  # fmt: skip
    with pytest.raises(QuotaExceeded, match="pending_training is 1") as e:
        with q.training_request(A):
            pass
    assert "expires (after 72 h)" in e.value.agent_text()
    with q.training_request(B):
        pass
    repo.transition(job.job_id, "cancelled", "agent", "t", expect_from="awaiting_approval", who="idn_a")
    with q.training_request(A):
        pass


def test_no_limit_means_no_check(store):
    q = Quotas(QuotaLimits(), store.engine)
    for _ in range(100):
        q.steps(A, 1000)
    with q.open_sandbox(A), q.running_command(A), q.training_request(A):
        pass

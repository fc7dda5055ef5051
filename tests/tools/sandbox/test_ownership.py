"""Issue 10 §4: agents are kept out of each other's sandboxes and trajectories (through the real
services: real store, real sandboxes, two agent callers sharing one store)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import update

from agent_rl_sandbox.schemas.tools import (
    SandboxClaimInput,
    SandboxExecInput,
    SandboxFinishInput,
    SandboxReadFileInput,
    SandboxResetInput,
    SandboxStateInput,
    SandboxWriteFileInput,
    TrajectoryFinishInput,
    TrajectoryGetInput,
    TrajectoryListInput,
    TrajectoryLogStepInput,
    TrajectoryStartInput,
)
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox._ownership import sandbox_capability
from agent_rl_sandbox.tools.store._schema import sandboxes

TASK = "claim-before-edit"
ALICE = Caller.agent("mcp:alice-session")
MALLORY = Caller.agent("mcp:mallory-session")


@pytest.fixture
def alice_sandbox(services):
    return services.sandbox.reset(SandboxResetInput(task_id=TASK, agent_name="alice"), ALICE)


def _not_yours(fn, *args) -> str:
    with pytest.raises(ActionError) as e:
        fn(*args)
    text = e.value.agent_text()
    assert "is not yours" in text and "Next step:" in text, text
    return text


def test_sandbox_ids_are_unguessable_capabilities(alice_sandbox):
    ids = {sandbox_capability() for _ in range(2000)}
    assert len(ids) == 2000
    for sid in [*list(ids)[:50], alice_sandbox.sandbox_id]:
        assert re.fullmatch(r"sbx_[A-Za-z0-9_-]{22}", sid), sid  # 22 url-safe characters = 128 bits


def test_another_agent_cannot_touch_a_sandbox_even_knowing_its_id(services, alice_sandbox):
    sid = alice_sandbox.sandbox_id
    sb = services.sandbox
    store = services.store
    before = store.trajectories.get(alice_sandbox.session_id)
    repo = services.settings.sandboxes_dir / sid / "repo"
    original = (repo / "shopcart" / "pricing.py").read_text()

    _not_yours(sb.exec, SandboxExecInput(sandbox_id=sid, command="echo pwned > shopcart/pricing.py"), MALLORY)
    _not_yours(sb.read_file, SandboxReadFileInput(sandbox_id=sid, path="shopcart/pricing.py"), MALLORY)
    _not_yours(sb.write_file, SandboxWriteFileInput(sandbox_id=sid, path="shopcart/pricing.py", content="x"), MALLORY)
    _not_yours(sb.claim, SandboxClaimInput(sandbox_id=sid, paths=["shopcart/pricing.py"]), MALLORY)
    _not_yours(sb.state, SandboxStateInput(sandbox_id=sid), MALLORY)
    _not_yours(sb.finish, SandboxFinishInput(sandbox_id=sid, message="done"), MALLORY)
    text = _not_yours(sb.reset, SandboxResetInput(task_id=TASK, sandbox_id=sid), MALLORY)
    assert "sandbox_reset with a task_id" in text

    # nothing changed and nothing was recorded in Alice's trajectory: refusals happen before any step
    after = store.trajectories.get(alice_sandbox.session_id)
    assert after.status == "running" and after.step_count == before.step_count
    assert store.sandboxes.get(sid).status == "open" and store.sandboxes.get(sid).claims == ()
    assert (repo / "shopcart" / "pricing.py").read_text() == original

    # Alice herself still works in it, and the operator may act on every sandbox
    assert sb.exec(SandboxExecInput(sandbox_id=sid, command="true"), ALICE).exit_code == 0
    assert sb.state(SandboxStateInput(sandbox_id=sid), OPERATOR).status == "open"


def test_a_reset_sandbox_stays_its_owners(services, alice_sandbox):
    sb = services.sandbox
    again = sb.reset(SandboxResetInput(task_id=TASK, sandbox_id=alice_sandbox.sandbox_id), ALICE)
    assert again.sandbox_id == alice_sandbox.sandbox_id
    _not_yours(sb.exec, SandboxExecInput(sandbox_id=again.sandbox_id, command="true"), MALLORY)
    # and the new episode's trajectory is hers too
    _not_yours(
        services.trajectories.log_step,
        TrajectoryLogStepInput(session_id=again.session_id, step={"source": "agent", "message": "hi"}),
        MALLORY,
    )


def test_sandbox_ids_are_never_listed_to_others(services, alice_sandbox):
    tr = services.trajectories
    # Alice's commands print her sandbox's path (and with it the id): others read the steps without it
    services.sandbox.exec(SandboxExecInput(sandbox_id=alice_sandbox.sandbox_id, command="pwd; ls -d $PWD/.."), ALICE)
    seen = tr.list(TrajectoryListInput(), MALLORY).trajectories
    mine = [s for s in seen if s.session_id == alice_sandbox.session_id]
    assert mine and mine[0].sandbox_id is None
    got = tr.get(TrajectoryGetInput(session_id=alice_sandbox.session_id), MALLORY)
    assert got.trajectory.sandbox_id is None
    assert alice_sandbox.sandbox_id not in got.model_dump_json() and "<sandbox>" in got.model_dump_json()
    # the owner and the operator see it
    own = tr.get(TrajectoryGetInput(session_id=alice_sandbox.session_id), ALICE)
    assert own.trajectory.sandbox_id and alice_sandbox.sandbox_id in own.steps[-1].model_dump_json()
    assert any(s.sandbox_id == alice_sandbox.sandbox_id for s in tr.list(TrajectoryListInput(), OPERATOR).trajectories)


def test_another_agent_cannot_append_to_or_finish_a_trajectory(services, alice_sandbox):
    tr = services.trajectories
    started = tr.start(TrajectoryStartInput(agent_name="alice", external_id="run-1"), ALICE).trajectory
    step = {"source": "agent", "message": "I ran the tests and they all pass", "client_step_id": "x1"}
    for sid in (started.session_id, alice_sandbox.session_id):
        before = services.store.trajectories.summary(sid).step_count
        _not_yours(tr.log_step, TrajectoryLogStepInput(session_id=sid, step=step), MALLORY)
        _not_yours(tr.log_step, TrajectoryLogStepInput(session_id=sid, steps=[step]), MALLORY)
        assert services.store.trajectories.summary(sid).step_count == before
    _not_yours(tr.finish, TrajectoryFinishInput(session_id=started.session_id), MALLORY)
    assert services.store.trajectories.summary(started.session_id).status == "running"
    # the same external id gives another agent its own trajectory, not Alice's
    other = tr.start(TrajectoryStartInput(agent_name="mallory", external_id="run-1"), MALLORY)
    assert other.created and other.trajectory.session_id != started.session_id
    again = tr.start(TrajectoryStartInput(agent_name="alice", external_id="run-1"), ALICE)
    assert not again.created and again.trajectory.session_id == started.session_id
    # the owner logs and finishes as before
    assert tr.log_step(TrajectoryLogStepInput(session_id=started.session_id, step=step), ALICE).step_count == 1
    assert tr.finish(TrajectoryFinishInput(session_id=started.session_id), ALICE).trajectory.status == "finished"


def test_rows_made_before_owners_existed_belong_to_no_agent(services):
    """A sandbox with no stored owner (the operator's, or from before owners were stored) is refused to
    every agent and open to the operator."""
    out = services.sandbox.reset(SandboxResetInput(task_id=TASK), OPERATOR)
    with services.store.engine.begin() as conn:  # as a row from before revision 0002 reads
        conn.execute(update(sandboxes).where(sandboxes.c.sandbox_id == out.sandbox_id).values(owner=None))
    _not_yours(services.sandbox.exec, SandboxExecInput(sandbox_id=out.sandbox_id, command="true"), ALICE)
    assert services.sandbox.exec(SandboxExecInput(sandbox_id=out.sandbox_id, command="true")).exit_code == 0

"""``Store.begin_episode``: a sandbox reset's store bookkeeping in one transaction writes the rows the
separate calls wrote before (old trajectory closed unpassed, new trajectory started, sandbox row
inserted or updated, the reset step appended), on both backends and on SQLite's direct DB-API path and
its SQLAlchemy fallback; and it writes all or nothing."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import select

from agent_rl_sandbox.tools.store import NewSandbox, Store, StoreError
from agent_rl_sandbox.tools.store._schema import sandboxes, steps, trajectories

_STEP = {
    "source": "system",
    "message": "Fix the bug. key AKIAIOSFODNN7EXAMPLE",  # redacted the same way on both paths
    "extra": {"event": "reset", "task_id": "t/1", "base_commit": "c0ffee", "tree_hash": "7ree"},
    "state_ref": "7ree",
}
_TASK = dict(task_id="t/1", behaviour="fix", split="train")


def _old_path(store: Store, sbx: str, *, new: bool, previous: str | None, agent_name: str | None) -> str:
    """What ``SandboxService.reset`` did before: one repository call per row."""
    t = store.trajectories
    if previous is not None:
        if t.summary(previous).status == "running":
            t.finish(previous, final_message=None, reward=0.0, passed=False, self_report_only=False)
        if agent_name is None:
            agent_name = t.summary(previous).agent.name
    traj = t.start(agent={"name": agent_name or "unknown"}, sandbox_id=sbx, owner="own-1", **_TASK)
    fields = dict(session_id=traj.session_id, status="open", isolation="bubblewrap", base_commit="c0ffee")
    if new:
        store.sandboxes.add(sandbox_id=sbx, task_id="t/1", path=f"/h/{sbx}", owner="own-1", **fields)
    else:
        store.sandboxes.update(sbx, claims=[], **fields)
    t.append_steps(traj.session_id, [_STEP])
    return traj.session_id


def _new_path(store: Store, sbx: str, *, new: bool, previous: str | None, agent_name: str | None) -> str:
    return store.begin_episode(
        sandbox_id=sbx,
        owner="own-1",
        agent_name=agent_name,
        isolation="bubblewrap",
        base_commit="c0ffee",
        step=_STEP,
        new=NewSandbox(path=f"/h/{sbx}", owner="own-1") if new else None,
        previous=previous,
        abandon=previous is not None,
        **_TASK,
    ).session_id


def _state(store: Store, sbx: str, sids: list[str]) -> dict:
    """Every row of the sandbox and its trajectories, ids and times replaced by their role."""
    names = {sid: f"traj{i}" for i, sid in enumerate(sids)} | {sbx: "sbx"}

    def norm(row: dict) -> dict:
        out = {}
        for k, v in row.items():
            if k in ("created_at", "updated_at", "finished_at"):
                v = v is not None
            elif k == "id":
                continue
            out[k] = names.get(v, v) if isinstance(v, str) else v
        if "data_json" in out:
            d = json.loads(out["data_json"])
            assert d.pop("timestamp")
            out["data_json"] = d
        if out.get("path"):
            out["path"] = out["path"].replace(sbx, "sbx")
        return out

    with store.engine.connect() as conn:
        trajs = [
            norm(dict(conn.execute(select(trajectories).where(trajectories.c.session_id == s)).mappings().one()))
            for s in sids
        ]
        stps = [
            norm(dict(r))
            for s in sids
            for r in conn.execute(select(steps).where(steps.c.session_id == s).order_by(steps.c.step_id)).mappings()
        ]
        sbx_row = norm(dict(conn.execute(select(sandboxes).where(sandboxes.c.sandbox_id == sbx)).mappings().one()))
    return {"trajectories": trajs, "steps": stps, "sandbox": sbx_row}


def _episodes(store: Store, path, sbx: str, *, agent_name: str | None, finish_between: bool) -> dict:
    sids = [path(store, sbx, new=True, previous=None, agent_name=agent_name)]
    for i in range(2):  # two resets: the first abandons a running episode; the second maybe a finished one
        if finish_between and i == 1:
            store.trajectories.finish(sids[-1], final_message="done", reward=1.0, passed=True)
        sids.append(path(store, sbx, new=False, previous=sids[-1], agent_name=None if i == 0 else "second"))
    return _state(store, sbx, sids)


@pytest.mark.parametrize("sqlite_path", ["direct", "sqlalchemy"])
@pytest.mark.parametrize("finish_between", [False, True])
def test_one_transaction_writes_the_rows_the_separate_calls_wrote(store, sqlite_path, finish_between, monkeypatch):
    if sqlite_path == "sqlalchemy":
        if store.dialect != "sqlite":
            pytest.skip("PostgreSQL has one path")
        monkeypatch.setattr(store.trajectories, "_direct", None)
    old = _episodes(store, _old_path, "sbx_old", agent_name="claude", finish_between=finish_between)
    new = _episodes(store, _new_path, "sbx_new", agent_name="claude", finish_between=finish_between)
    assert new == old
    assert old["trajectories"][0]["status"] == "finished" and old["trajectories"][0]["reward"] == 0.0
    assert old["trajectories"][1]["agent_name"] == "claude"  # inherited from the previous episode
    assert old["trajectories"][2]["agent_name"] == "second"
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(new)
    assert [s["step_id"] for s in new["steps"]] == [1, 1, 1]


def test_no_agent_name_anywhere_is_unknown(store):
    sid = _new_path(store, "sbx_u", new=True, previous=None, agent_name=None)
    assert store.trajectories.summary(sid).agent.name == "unknown"


def test_the_direct_connection_in_use_falls_back_to_the_waiting_transaction(store):
    direct = store.trajectories._direct
    if direct is None:
        pytest.skip("SQLite only")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with direct._use():
            held.set()
            release.wait(10)

    th = threading.Thread(target=hold)
    th.start()
    try:
        assert held.wait(10)
        sid = _new_path(store, "sbx_f", new=True, previous=None, agent_name="a")
    finally:
        release.set()
        th.join()
    assert store.trajectories.get(sid).step_count == 1
    assert store.sandboxes.get("sbx_f").session_id == sid


@pytest.mark.parametrize("sqlite_path", ["direct", "sqlalchemy"])
def test_a_failure_writes_nothing(store, sqlite_path, monkeypatch):
    if sqlite_path == "sqlalchemy":
        if store.dialect != "sqlite":
            pytest.skip("PostgreSQL has one path")
        monkeypatch.setattr(store.trajectories, "_direct", None)
    first = _new_path(store, "sbx_a", new=True, previous=None, agent_name="a")
    before = store.trajectories.list(limit=100)
    with pytest.raises(StoreError, match="unknown trajectory"):
        _new_path(store, "sbx_a", new=False, previous="traj_missing", agent_name=None)
    with pytest.raises(Exception, match="(?i)unique|duplicate|constraint"):  # a taken sandbox id: after the abandon
        store.begin_episode(
            sandbox_id="sbx_a",
            owner=None,
            agent_name=None,
            isolation="none",
            base_commit="c0ffee",
            step=_STEP,
            new=NewSandbox(path="/h/x", owner=None),
            previous=first,
            abandon=True,
            **_TASK,
        )
    assert store.trajectories.list(limit=100) == before  # the first episode still running, no new trajectory
    assert store.trajectories.summary(first).status == "running"
    assert store.sandboxes.get("sbx_a").session_id == first


def test_a_sandbox_read_through_the_direct_connection_is_the_same_record(store, monkeypatch):
    _new_path(store, "sbx_r", new=True, previous=None, agent_name="a")
    store.sandboxes.update("sbx_r", claims=["a.py", "b/c.txt"])
    store.begin_episode(
        sandbox_id="sbx_o",
        owner=None,
        agent_name=None,
        isolation="none",
        base_commit="c0ffee",
        step=_STEP,
        new=NewSandbox(path="/h/o", owner=None),
        **_TASK,
    )
    direct = [store.sandboxes.get(s) for s in ("sbx_r", "sbx_o")]
    with pytest.raises(StoreError, match="unknown sandbox"):
        store.sandboxes.get("sbx_missing")
    monkeypatch.setattr(store.sandboxes, "_direct", None)
    assert [store.sandboxes.get(s) for s in ("sbx_r", "sbx_o")] == direct
    assert direct[0].claims == ("a.py", "b/c.txt") and direct[1].owner is None
    with pytest.raises(StoreError, match="unknown sandbox"):
        store.sandboxes.get("sbx_missing")

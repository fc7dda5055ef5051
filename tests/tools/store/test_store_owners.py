"""Revision 0002: owners on trajectories and sandboxes (issue 10 §4), on SQLite and PostgreSQL."""

from __future__ import annotations

from test_store_migrations import _build_v2, _versions

from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.store._migrations import HEAD_REVISION


def test_rows_from_before_owners_have_none_and_new_rows_keep_theirs(store_url):
    _build_v2(store_url)  # a store from before Alembic: upgraded through 0001 and 0002 in one open
    store = Store(store_url)
    try:
        assert HEAD_REVISION >= "0002" and _versions(store_url)[0] == [HEAD_REVISION]  # 0002 and any later revision
        t = store.trajectories
        assert t.owners(["traj_v2", "traj_done", "nope"]) == {"traj_v2": None, "traj_done": None}
        assert store.sandboxes.get("sbx_v2").owner is None
        mine = t.start(agent={"name": "a"}, owner="mcp:a").session_id
        held = t.start(agent={"name": "b"}, task_id="x/heldout-1", split="heldout", owner="mcp:b").session_id
        store.sandboxes.add(
            sandbox_id="sbx_new", task_id="x", path="/p", base_commit="c", status="open", isolation="none",
            session_id=mine, owner="mcp:a",
        )  # fmt: skip
        assert t.owners([mine, held]) == {mine: "mcp:a", held: "mcp:b"}
        assert store.sandboxes.get("sbx_new").owner == "mcp:a"
        seen_by_a = {s.session_id for s in t.list(visible_to="mcp:a")[0]}
        assert mine in seen_by_a and held not in seen_by_a and "traj_v2" in seen_by_a
        assert held in {s.session_id for s in t.list(visible_to="mcp:b")[0]}
        assert held in {s.session_id for s in t.list()[0]}
    finally:
        store.close()

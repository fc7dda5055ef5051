"""``trajectory_log_step`` on its event-loop path (SQLite, plain DB-API through the store's own
connection, ``tools/store/_sqlite_direct.py``) through real in-process MCP clients: what it answers and
stores is what the worker-thread path answers and stores, and its guarantees hold: a retry returns the
stored step, another session's trajectory is refused, secrets are redacted, a read right after the
call sees the step, and two sessions logging at once get dense, unique step ids."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server

pytestmark = pytest.mark.anyio

SECRET = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture
def server(services):
    return build_server(services=services)


async def _start(client) -> str:
    res = await client.call_tool("trajectory_start", {"agent_name": "fast-path"})
    return res.structured_content["trajectory"]["session_id"]


async def _log(client, sid: str, step: dict):
    return await client.call_tool("trajectory_log_step", {"session_id": sid, "step": step})


async def test_retry_redaction_and_read_after_write(server, services):
    assert services.store.trajectories._direct is not None  # the SQLite store: the direct path is in force
    async with Client(server) as client:
        sid = await _start(client)
        step = {"message": f"exported AWS_ACCESS_KEY_ID={SECRET} and ran tests", "client_step_id": "s1"}
        first = await _log(client, sid, step)
        assert not first.is_error
        assert first.structured_content["steps"] == [{"step_id": 1, "client_step_id": "s1", "created": True}]
        assert first.structured_content["redactions"] == {"aws-access-key": 1}
        # read after write: the step is there at once, redacted
        got = await client.call_tool("trajectory_get", {"session_id": sid})
        assert [s["step_id"] for s in got.structured_content["steps"]] == [1]
        assert SECRET not in got.structured_content["steps"][0]["message"]
        assert "[REDACTED:aws-access-key]" in got.structured_content["steps"][0]["message"]
        # a retry (even with other text) returns the stored step and adds nothing
        again = await _log(client, sid, {**step, "message": "other text"})
        assert again.structured_content["steps"] == [{"step_id": 1, "client_step_id": "s1", "created": False}]
        assert again.structured_content["step_count"] == 1
        nxt = await _log(client, sid, {"message": "next", "client_step_id": "s2"})
        assert nxt.structured_content["steps"][0]["step_id"] == 2 and nxt.structured_content["step_count"] == 2
    stored = services.store.trajectories.get(sid)
    assert [s.message for s in stored.steps] == [
        "exported AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key] and ran tests",
        "next",
    ]
    assert all(s.provenance == "agent" for s in stored.steps)


async def test_another_session_is_refused_and_nothing_is_written(server, services):
    async with Client(server) as owner, Client(server) as hostile:
        sid = await _start(owner)
        assert not (await _log(owner, sid, {"message": "mine", "client_step_id": "a"})).is_error
        for step in ({"message": "not yours", "client_step_id": "b"}, {"message": "retry?", "client_step_id": "a"}):
            res = await _log(hostile, sid, step)
            assert res.is_error and "not yours" in res.content[0].text
        missing = await _log(hostile, "traj_000000000000", {"message": "x"})
        assert missing.is_error and "unknown trajectory" in missing.content[0].text
    assert [s.message for s in services.store.trajectories.get(sid).steps] == ["mine"]


async def test_concurrent_sessions_get_dense_unique_ids(server, services):
    async with Client(server) as a, Client(server) as b:
        sa, sb = await _start(a), await _start(b)
        got: dict[str, list[int]] = {sa: [], sb: []}

        async def run(client, sid: str, tag: str) -> None:
            for i in range(40):
                res = await _log(client, sid, {"message": f"{tag} {i}", "client_step_id": f"{tag}{i}"})
                assert not res.is_error, res.content
                got[sid].append(res.structured_content["steps"][0]["step_id"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, a, sa, "a")
            tg.start_soon(run, b, sb, "b")
    for sid in (sa, sb):
        assert got[sid] == list(range(1, 41))
        stored = services.store.trajectories.get(sid)
        assert [s.step_id for s in stored.steps] == list(range(1, 41)) and stored.step_count == 40


async def test_owner_is_read_in_the_write_transaction(server, services):
    """The direct path reads the owner with the row it appends to, inside ``BEGIN IMMEDIATE``: no read
    of its own before the transaction (the check and the write see the same row)."""
    async with Client(server) as client:
        sid = await _start(client)
        assert not (await _log(client, sid, {"message": "warm", "client_step_id": "w"})).is_error
        conn = services.store.trajectories._direct._conn
        issued: list[str] = []
        conn.set_trace_callback(issued.append)
        try:
            assert not (await _log(client, sid, {"message": "one", "client_step_id": "one"})).is_error
        finally:
            conn.set_trace_callback(None)
    assert [s.split()[0] for s in issued] == ["BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT"]
    assert "owner" in issued[1] and "step_count" in issued[1]


async def test_refusal_comes_before_step_errors_and_leaves_no_transaction(server, services):
    """Another session's call with a malformed step (a result naming no call of the step, which only the
    store checks) is refused as not its own, an unknown id as unknown; nothing is written, and the
    refusal's rollback leaves the direct connection usable for the owner."""
    bad = {
        "message": "bad pairing",
        "client_step_id": "bad",
        "tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {}}],
        "observation": {"results": [{"source_call_id": "nope", "content": "x"}]},
    }
    async with Client(server) as owner, Client(server) as hostile:
        sid = await _start(owner)
        mine = await _log(owner, sid, bad)
        assert mine.is_error and "malformed" in mine.content[0].text
        res = await _log(hostile, sid, bad)
        assert res.is_error and "not yours" in res.content[0].text
        res = await _log(hostile, "traj_000000000000", bad)
        assert res.is_error and "unknown trajectory" in res.content[0].text
        res = await _log(hostile, sid, {"message": "fine but not yours", "client_step_id": "h"})
        assert res.is_error and "not yours" in res.content[0].text
        assert not services.store.trajectories._direct._conn.in_transaction
        ok = await _log(owner, sid, {"message": "mine", "client_step_id": "m"})
        assert ok.structured_content["steps"] == [{"step_id": 1, "client_step_id": "m", "created": True}]
    assert [s.message for s in services.store.trajectories.get(sid).steps] == ["mine"]

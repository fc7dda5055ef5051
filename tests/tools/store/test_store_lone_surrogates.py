"""A lone surrogate (``"\\ud800"``: a legal Python ``str``, JSON can escape it, UTF-8 cannot encode it) in
anything a trajectory stores is refused with a clear error naming where, on every write path and both
backends, and nothing is written: not an internal ``UnicodeEncodeError`` from the database driver, and
not pydantic's silent replacement character (which it writes for one in a dict key)."""

from __future__ import annotations

import json

import pytest

from agent_rl_sandbox.tools.store import NOT_UNICODE, StepRejected, StoreError, lone_surrogate_at

OK = {
    "message": "ran the tests",
    "tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {"cmd": ["pytest", "-q"]}}],
    "observation": {"results": [{"source_call_id": "c1", "content": "4 passed"}]},
    "extra": {"n": [1, {"k": "v"}]},
    "timestamp": "2026-11-29T10:00:00Z",
    "client_step_id": "imp:2",
}

# (a change to OK putting a lone surrogate somewhere, the path the error names)
PLACES = [
    ({"message": "a \ud800 b"}, "message"),
    ({"message": "trailing \udfff"}, "message"),
    ({"extra": {"n": [1, {"k": "v\udc00"}]}}, "extra.n[1].k"),
    ({"extra": {"\ud800key": 1}}, "extra.\\ud800key"),  # pydantic alone would store it as U+FFFD
    (
        {"tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {"cmd": ["x\ud83d"]}}]},
        "tool_calls[0].arguments.cmd[0]",
    ),
    ({"observation": {"results": [{"source_call_id": "c1", "content": "\udcff"}]}}, "observation.results[0].content"),
    ({"timestamp": "2026-11-29T10:00:00Z\ud800"}, "timestamp"),
    ({"client_step_id": "imp:\ud800"}, "client_step_id"),
    ({"metrics": {"big": 2**70, "s": "\ud800"}}, "metrics.s"),  # orjson refuses the int too: the walk finds it
]


def test_the_path_of_a_lone_surrogate():
    assert lone_surrogate_at({"a": ["x", {"b": "ok", "c": "\ud800"}]}) == "a[1].c"
    assert lone_surrogate_at("\udfff") == "$"
    assert lone_surrogate_at({"k": 2**70, "s": "é 😀 \u2028"}) is None  # refused by orjson, yet no surrogate
    assert lone_surrogate_at({"\ud800": 1}) == "\\ud800"  # the path itself stays valid text
    pair = json.loads('"\\ud83d\\ude00"')  # JSON's escaped pair reads as one character
    assert pair == "😀" and lone_surrogate_at({pair: pair}) is None
    assert lone_surrogate_at("\ud83d\ude00") == "$"  # two code points in Python: each a lone surrogate


@pytest.mark.parametrize("nowait", [False, True])
@pytest.mark.parametrize("change, path", PLACES)
def test_log_steps_refuses_a_lone_surrogate_naming_where(store, change, path, nowait):
    repo = store.trajectories
    sid = repo.start(agent={"name": "a"}).session_id
    repo.log_steps(sid, [{"message": "first"}])
    steps = [{**OK, "client_step_id": "x"}, {**OK, **change}]
    if store.trajectories.dialect != "sqlite" and nowait:
        pytest.skip("PostgreSQL writes never run without waiting")
    with pytest.raises(StepRejected) as e:
        repo.log_steps(sid, steps, nowait=nowait)
    assert e.value.index == 1 and NOT_UNICODE in str(e.value)
    assert e.value.field == path
    assert "step 2 is malformed at " in str(e.value)
    str(e.value).encode("utf-8")  # the message itself is valid text
    assert repo.summary(sid).step_count == 1 and len(repo.get(sid).steps) == 1  # nothing of the batch written


@pytest.mark.parametrize("change, path", PLACES)
def test_a_bulk_import_refuses_a_lone_surrogate_naming_where(store, change, path):
    """The batch has clean steps around the bad one (the fast path, screened 256 at a time) and the bad
    one in each place: its index and field, and nothing of the trajectory written."""
    steps = [{**OK, "client_step_id": f"imp:{i}"} for i in range(300)]
    steps[280] = {**OK, **change, **({} if "client_step_id" in change else {"client_step_id": "imp:280"})}
    with pytest.raises(StepRejected) as e:
        store.trajectories.import_trajectory(session_id="bad", steps_in=steps)
    assert e.value.index == 280 and e.value.field == path
    assert NOT_UNICODE in str(e.value)
    assert not store.trajectories.exists("bad")


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"agent": {"name": "a\ud800"}}, "agent.name"),
        ({"agent": {"name": "a", "harness": {"x": "\udc00"}}}, "agent.harness.x"),  # an extra agent field
        ({"task_id": "t\ud800"}, "task_id"),
        ({"external_id": "mcp:\ud800"}, "external_id"),
        ({"session_id": "s\ud800"}, "session_id"),
    ],
)
def test_a_trajectory_row_with_a_lone_surrogate_is_refused_by_start_and_import(store, kw, field):
    repo = store.trajectories
    with pytest.raises(StoreError, match=f"the trajectory's {field} is not stored") as e:
        repo.start(**kw)
    assert NOT_UNICODE in str(e.value)
    args = {"session_id": "imp", **kw}
    with pytest.raises(StoreError, match=f"the trajectory's {field} is not stored"):
        repo.import_trajectory(steps_in=[{"message": "m"}], **args)
    assert repo.list()[1] == 0


def test_finish_and_import_refuse_a_final_message_with_a_lone_surrogate(store):
    repo = store.trajectories
    sid = repo.start(agent={"name": "a"}).session_id
    with pytest.raises(StoreError, match="the trajectory's final_message is not stored"):
        repo.finish(sid, final_message="done \ud800")
    assert repo.summary(sid).status == "running"  # still open: nothing was written
    with pytest.raises(StoreError, match="the trajectory's final_message is not stored"):
        repo.import_trajectory(session_id="imp", steps_in=[{"message": "m"}], final_message="\udfff")
    assert not repo.exists("imp")


def test_meta_with_a_lone_surrogate_is_stored_as_given(store):
    """Meta is stored as ASCII JSON (``\\ud800`` escapes), so it reads back as the value given."""
    repo = store.trajectories
    sid = repo.start(agent={"name": "a"}, meta={"note": "x\ud800"}).session_id
    assert repo.get(sid).meta == {"note": "x\ud800"}

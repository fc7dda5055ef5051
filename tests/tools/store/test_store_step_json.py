"""What ``log_steps`` stores is what it stored before it wrote each step's JSON with pydantic's writer
(issue 16): byte for byte the json module's compact dump of the step as returned (``step_id`` and
``timestamp`` first, then the other fields in order), on the event-loop path (``nowait``, SQLite's plain
DB-API) and the waiting path, on every backend; and its redaction (now the screened walk) finds, replaces
and counts what the unscreened walk does."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from sqlalchemy import select

from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.store._schema import steps as steps_table

# Values where pydantic's JSON writer and the json module could part: floats below 1e-4 (``1e-5`` vs
# ``1e-05``), large and negative zero floats, big ints, non-ASCII, non-BMP, line separators, control
# characters, empty containers, text that looks like a small float inside a string.
TRICKY: list[dict] = [
    {"message": "plain", "client_step_id": "a"},
    {"message": "", "client_step_id": "b"},
    {"message": 'café ☕ 😀 \u2028 \u2029 \x7f \x1f tab\there "quoted" back\\slash', "client_step_id": "c"},
    {"metrics": {"cost_usd": 0.00001, "tiny": 1e-7, "big": 1e16, "huge": 1.5e300, "neg0": -0.0, "n": 2**70}},
    {"metrics": {"cost_usd": 0.0031, "prompt_tokens": 1200}, "message": "looks like :0.00001 and ,1e-05"},
    {"extra": {"nested": {"list": [1, 2.5, None, True, {"k": "v"}], "empty": {}, "none": None}}},
    {
        "tool_calls": [{"tool_call_id": "x1", "function_name": "shell", "arguments": {"command": "ls -la"}}],
        "observation": {"results": [{"source_call_id": "x1", "content": "total 0\n"}, {"content": None}]},
        "exit_code": 0,
        "done": True,
        "outcome": "error",
        "source": "user",
    },
    {"timestamp": "2026-11-29T10:00:00Z", "message": "given time", "client_step_id": "d"},
    {"message": "exported AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "extra": {"note": "ghp_" + "a" * 36}},
]


def _stored(store: Store, sid: str) -> list[str]:
    with store.engine.connect() as conn:
        return list(
            conn.execute(
                select(steps_table.c.data_json).where(steps_table.c.session_id == sid).order_by(steps_table.c.step_id)
            ).scalars()
        )


def _json_module(step: Step) -> str:
    """What the code before stored: ``json.dumps`` of the step's JSON-mode dump."""
    return json.dumps(step.model_dump(mode="json", exclude_none=True), ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("nowait", [False, True], ids=["waiting", "event-loop"])
@pytest.mark.parametrize("batch", [False, True], ids=["one-by-one", "batch"])
def test_stored_json_is_the_json_module_dump(store, nowait, batch):
    t = store.trajectories
    if nowait and not t.writes_without_waiting:
        pytest.skip("PostgreSQL: nowait always hands the write to a thread (test_store_nowait.py)")
    sid = t.start(agent={"name": "json"}).session_id
    items = [{**s, "provenance": "agent"} for s in TRICKY]
    returned: list[Step] = []
    redactions: Counter[str] = Counter()
    for chunk in [items] if batch else [[x] for x in items]:
        res = t.log_steps(sid, chunk, nowait=nowait)
        returned += res.steps
        redactions.update(res.redactions)
    stored = _stored(store, sid)
    assert stored == [_json_module(s) for s in returned]
    assert [Step.model_validate_json(x) for x in stored] == returned == t.get(sid).steps
    # the timestamp given is kept, the others are the commit time
    assert returned[7].timestamp == "2026-11-29T10:00:00Z" and all(s.timestamp for s in returned)
    # redaction: the same text and counts as the unscreened walk over the same steps
    red = t.redactor
    expected: Counter[str] = Counter()
    for item, step in zip(items, returned, strict=True):
        want, counts = red.value({k: v for k, v in item.items() if k != "timestamp"})
        expected.update(counts)
        got = step.model_dump(exclude_none=True)
        for key, value in want.items():
            if key in ("message", "extra"):
                assert got[key] == value
    assert redactions == expected and expected["aws-access-key"] == 1 and sum(expected.values()) >= 2
    assert "AKIAIOSFODNN7EXAMPLE" not in "".join(stored)


def test_retry_in_a_batch_returns_the_first_with_its_time(store):
    """A client step id repeated in one batch answers the first one (same id, same timestamp), stored once."""
    t = store.trajectories
    sid = t.start(agent={"name": "json"}).session_id
    res = t.log_steps(sid, [{"message": "one", "client_step_id": "r"}, {"message": "two", "client_step_id": "r"}])
    assert res.created == [True, False]
    assert [s.step_id for s in res.steps] == [1, 1] and res.steps[0].timestamp == res.steps[1].timestamp
    assert res.steps[1].message == "two"  # the input as given, as before: only id and time are the stored one's
    assert _stored(store, sid) == [_json_module(res.steps[0])]

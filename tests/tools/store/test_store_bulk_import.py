"""``TrajectoryRepository.import_trajectory`` (the bulk import path) stores what ``start`` + ``log_steps``
(``keep_absent_timestamps``) + ``finish`` store for the same input, byte for byte (trajectory row and every
step's ``data_json``), on both backends; a bad step writes nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools.store import StoreError, step_problems
from agent_rl_sandbox.tools.store._fast_steps import fast_rest
from agent_rl_sandbox.tools.store._redact import _scanned
from agent_rl_sandbox.tools.store._schema import steps as steps_table
from agent_rl_sandbox.tools.store._schema import trajectories
from agent_rl_sandbox.tools.store._trajectories import StepRejected, _pairs_up

SECRET = "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"


def _corpus() -> list[dict]:
    floats = [0.1, 1e-05, 1e-07, 0.00012, 1e16, 1e22, -0.0, 12.0, 5e-324, 1.7976931348623157e308, 0.30000000000000004]
    out: list[dict] = [{"source": "user", "message": "fix the failing test", "timestamp": "2026-11-29T10:00:00Z"}]
    for i, f in enumerate(floats):
        out.append(
            {
                "source": "agent",
                "message": f'step {i}: é 😀 \x1f \u2028 "quoted" back\\slash\n{SECRET if i % 3 == 0 else ""}',
                "tool_calls": [
                    {
                        "tool_call_id": f"c{i}",
                        "function_name": "shell",
                        "arguments": {"command": ["bash", "-lc", f"pytest -k {i}"], "env": {"K": SECRET}, "n": i},
                    }
                ],
                "observation": {"results": [{"source_call_id": f"c{i}", "content": f"{i} passed, cost {f}"}]},
                "metrics": {"prompt_tokens": 100 + i, "cost_usd": f, "list": [f, {"x": f}], "big": 2**70},
                "extra": {"claimed_reward": f, "none": None, "nested": {"password": "hunter2hunter2"}},
                "provenance": "agent",
                "outcome": "ok" if i % 2 else "error",
                "exit_code": i % 3,
                "client_step_id": f"imp:{i + 2}",
                **({"timestamp": "2026-11-29T10:00:01.5+02:00"} if i % 2 else {}),
                **({"reward": f} if i % 4 == 0 else {}),
                **({"done": True} if i == len(floats) - 1 else {}),
            }
        )
    out.append({"source": "agent", "message": "", "extra": {}, "client_step_id": None})
    return out


def _rows(store, sid):
    with store.engine.connect() as conn:
        traj = dict(conn.execute(select(trajectories).where(trajectories.c.session_id == sid)).mappings().one())
        rows = [
            tuple(r)
            for r in conn.execute(
                select(
                    steps_table.c.step_id,
                    steps_table.c.client_step_id,
                    steps_table.c.provenance,
                    steps_table.c.data_json,
                )
                .where(steps_table.c.session_id == sid)
                .order_by(steps_table.c.step_id)
            )
        ]
    traj.pop("session_id")
    return traj, rows


KW = dict(
    agent={"name": "bench", "version": "1"},
    task_id="t1",
    behaviour="b",
    split="heldout",
    origin="import:atif",
    external_id="atif:x",
    meta={"file": "/x.json", "sha256": "ab", "note": SECRET},
    created_at="2026-11-29T10:00:00Z",
)


def test_bulk_rows_are_byte_identical_to_start_log_finish(store):
    repo = store.trajectories
    steps = _corpus()
    repo.start(session_id="old", **KW)
    res = repo.log_steps("old", steps, keep_absent_timestamps=True)
    repo.finish("old", final_message=f"done {SECRET}", finished_at="2026-11-29T11:00:00+01:00")
    bulk = repo.import_trajectory(
        session_id="new", steps_in=steps, final_message=f"done {SECRET}", finished_at="2026-11-29T11:00:00+01:00", **KW
    )
    assert _rows(store, "new") == _rows(store, "old")
    assert bulk.steps == len(steps) and bulk.redactions == res.redactions and bulk.redactions
    assert repo.get("new").model_dump(exclude={"session_id"}) == repo.get("old").model_dump(exclude={"session_id"})


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"exit_code": "three"}, "exit_code"),
        ({"tool_calls": [{"tool_call_id": "a", "function_name": "f", "arguments": "not a dict"}]}, "tool_calls[0]"),
        ({"message": "lone \ud800 surrogate"}, "message"),
        ({"observation": {"results": [{"source_call_id": "nope", "content": "x"}]}}, None),
    ],
)
def test_a_bad_step_writes_nothing(store, bad, field):
    steps = _corpus()
    steps[5] = {**steps[5], **bad}
    with pytest.raises(StepRejected) as e:
        store.trajectories.import_trajectory(session_id="bad", steps_in=steps, **KW)
    assert e.value.index == 5
    assert (e.value.field or "").startswith(field or "")
    assert not store.trajectories.exists("bad")


def test_repeated_client_step_ids_and_unknown_parents_write_nothing(store):
    steps = [{"message": "a", "client_step_id": "imp:1"}, {"message": "b", "client_step_id": "imp:1"}]
    with pytest.raises(StepRejected) as e:
        store.trajectories.import_trajectory(session_id="dup", steps_in=steps)
    assert e.value.index == 1 and not store.trajectories.exists("dup")
    with pytest.raises(StoreError):
        store.trajectories.import_trajectory(session_id="orphan", steps_in=steps[:1], parent_session_id="nope")
    assert not store.trajectories.exists("orphan")


_IDS = st.sampled_from(["a", "b", "c"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_IDS, max_size=4), st.one_of(st.none(), st.lists(st.one_of(st.none(), _IDS), max_size=4)))
def test_the_bulk_pairing_check_is_the_store_rule(call_ids, result_ids):
    step = Step.model_validate(
        {
            "step_id": 1,
            "timestamp": "",
            "tool_calls": [{"tool_call_id": c, "function_name": "f", "arguments": {}} for c in call_ids],
            **(
                {"observation": {"results": [{"source_call_id": r, "content": "x"} for r in result_ids]}}
                if result_ids is not None
                else {}
            ),
        }
    )
    assert _pairs_up(step) == (not step_problems(step))


def _pydantic_rest(item: dict) -> str:
    data = {"timestamp": item.get("timestamp") or "", **item, "step_id": 1}
    return Step.model_validate(data).model_dump_json(exclude_none=True, exclude={"step_id", "timestamp"})


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_OBJ = st.dictionaries(st.text(max_size=8), _JSON, max_size=4)


@st.composite
def _partial_steps(draw) -> dict:
    ids = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True))
    step: dict = {"message": draw(st.text(max_size=20))}
    if draw(st.booleans()):
        step["tool_calls"] = [{"tool_call_id": c, "function_name": "f", "arguments": draw(_OBJ)} for c in ids]
    if draw(st.booleans()):
        step["observation"] = {
            "results": [
                {
                    "source_call_id": draw(st.one_of(st.none(), st.sampled_from(ids or ["a"]))),
                    "content": draw(st.one_of(st.none(), st.text(max_size=10))),
                }
                for _ in range(draw(st.integers(0, 2)))
            ]
        }
    for key, strategy in (
        ("timestamp", st.sampled_from(["", "2026-11-29T10:00:00Z"])),
        ("source", st.sampled_from(["user", "agent", "system"])),
        ("metrics", st.one_of(st.none(), _OBJ)),
        ("extra", _OBJ),
        ("provenance", st.sampled_from(["server", "hook", "agent"])),
        ("outcome", st.sampled_from(["ok", "error", "unknown"])),
        ("exit_code", st.one_of(st.none(), st.integers(-3, 300))),
        ("state_ref", st.one_of(st.none(), st.text(max_size=8))),
        ("reward", st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))),
        ("done", st.booleans()),
        ("client_step_id", st.one_of(st.none(), st.text(max_size=8))),
    ):
        if draw(st.booleans()):
            step[key] = draw(strategy)
    return step


@settings(max_examples=400, deadline=None)
@given(_partial_steps())
def test_the_fast_step_text_is_pydantics(item):
    """issue 16: ``fast_rest`` (a step's stored JSON without pydantic) writes pydantic's text whenever it
    writes one, and collects the strings the redactor's walk scans."""
    strings: list[str] = []
    rest = fast_rest(item, strings)
    expected = _pydantic_rest(item) if _pairs_up_dict(item) else None
    if rest is not None:
        assert rest == expected
        found: list[str] = []
        _scanned({"timestamp": "", **item, "step_id": 1}, found)
        assert sorted(strings) == sorted(found)
    else:  # only what it cannot prove: integers beyond 64 bits (orjson's range), or a step the store refuses
        assert expected is None or any(v < -(2**63) or v >= 2**64 for v in _ints(item)), item


def _ints(value):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _ints(v)
    elif isinstance(value, list):
        for v in value:
            yield from _ints(v)


def _pairs_up_dict(item: dict) -> bool:
    ids = [c["tool_call_id"] for c in item.get("tool_calls") or []]
    results = (item.get("observation") or {}).get("results", [])
    return len(set(ids)) == len(ids) and all(r["source_call_id"] in (None, *ids) for r in results)


class _Str(str):
    pass


@pytest.mark.parametrize(
    "odd",
    [
        {"reward": 1},  # pydantic writes 1.0
        {"exit_code": True},
        {"exit_code": 1.0},
        {"done": 1},
        {"timestamp": None},
        {"message": _Str("a subclass")},
        {"metrics": {1: "non-string key"}},
        {"extra": {"big": 2**64}},
        {"extra": {"when": __import__("datetime").datetime(2026, 1, 1)}},
        {"unknown_field": 1},
        {"source": ["agent"]},
        {"tool_calls": [{"tool_call_id": "a", "function_name": "f", "arguments": "{}"}]},
        {"tool_calls": [{"tool_call_id": "a", "function_name": "f"}] * 2},
        {"observation": {"results": [{"source_call_id": "nope"}]}},
        {"observation": {"results": [{"content": 3}]}},
    ],
)
def test_the_fast_step_text_leaves_anything_unusual_to_pydantic(odd):
    assert fast_rest({"message": "m", **odd}, []) is None


def test_bulk_rows_through_the_fast_path_are_byte_identical_to_start_log_finish(store, monkeypatch):
    """Most steps clean (the fast path, screened 256 at a time), a secret in the second batch (that batch
    the exact way), small floats (json's text), an odd step (pydantic): the rows of start + log_steps +
    finish, byte for byte, on both backends."""
    from agent_rl_sandbox.tools.store._trajectories import TrajectoryRepository

    steps = [
        {
            "source": "agent",
            "message": f"step {i}: é 😀 \x1f \u2028 back\\slash\nnext",
            "timestamp": "2026-11-29T10:00:00Z" if i % 3 else "",
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "shell", "arguments": {"cmd": f"ls {i}"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": f"{i} fine"}, {"content": None}]},
            "metrics": {"prompt_tokens": i, "cost_usd": 0.00003 if i == 7 else 0.25, "none": None},
            "extra": {"n": [i, {"k": None}]},
            "provenance": "agent",
            "outcome": "ok",
            "exit_code": 0,
            "client_step_id": f"imp:{i + 1}",
        }
        for i in range(600)
    ]
    steps[300]["message"] += f" {SECRET}"
    steps[450]["reward"] = 1  # an int reward: pydantic's float
    slow = []
    real = TrajectoryRepository._prepare_one
    monkeypatch.setattr(
        TrajectoryRepository, "_prepare_one", staticmethod(lambda i, d, s: slow.append(i) or real(i, d, s))
    )
    repo = store.trajectories
    bulk = repo.import_trajectory(session_id="new", steps_in=steps, **KW)
    monkeypatch.undo()
    repo.start(session_id="old", **KW)
    res = repo.log_steps("old", steps, keep_absent_timestamps=True)
    repo.finish("old", finished_at=repo.summary("new").finished_at)
    assert _rows(store, "new") == _rows(store, "old")
    assert bulk.redactions == res.redactions and sum(bulk.redactions.values()) == 1
    assert set(slow) == {7, 450} | set(range(256, 512)), sorted(set(slow))[:5]

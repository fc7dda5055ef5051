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

"""ATIF export is faithful: import -> export -> import is the identity on every ATIF sample we have (Harbor's
golden trajectories, the OpenHands reference) and on generated documents (hypothesis); results without
``source_call_id`` stay observations and do not fail their calls; ``model_name``, ``reasoning_content`` and
metrics survive; absent timestamps stay absent (a time budget stays unscorable); two files sharing a
normalised session id are not linked as parent and child."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.tools.evals import score_trajectory
from agent_rl_sandbox.tools.formats.atif import write_document
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.trajectories import ExportOptions, export_trajectories, import_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports" / "atif"
SAMPLES = sorted((FIXTURES / "harbor").glob("*.json")) + [FIXTURES / "openhands__hello-world.trajectory.json"]
STEP_KEYS = ("step_id", "source", "message", "model_name", "reasoning_content", "tool_calls", "observation", "metrics")


def _stored(store, sid) -> dict:
    """What must survive a round trip: the agent, the task fields and every step field."""
    t = store.trajectories.get(sid)
    return {
        "agent": t.agent.model_dump(exclude_none=True),
        "task": (t.task_id, t.behaviour, t.split),
        "steps": [s.model_dump(exclude_none=True) for s in t.steps],
    }


def _round_trip(store, path: Path, tmp: Path) -> tuple[str, str, dict]:
    first = import_file(store.trajectories, path)
    assert first.ok and len(first.trajectories) == 1, first.problems
    doc = write_document(store.trajectories.get(first.trajectories[0]))
    out = tmp / f"{path.stem}.export.json"
    out.write_text(json.dumps(doc))
    second = import_file(store.trajectories, out)
    assert second.ok and len(second.trajectories) == 1, second.problems
    assert not [p for p in second.problems if p.severity == "warning"], second.problems
    return first.trajectories[0], second.trajectories[0], doc


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_import_export_import_is_the_identity_on_every_atif_sample(store, tmp_path, path):
    a, b, doc = _round_trip(store, path, tmp_path)
    assert _stored(store, a) == _stored(store, b)
    original = json.loads(path.read_text())
    # the export says what the file said, field by field
    for mine, theirs in zip(doc["steps"], original["steps"], strict=True):
        for k in STEP_KEYS:
            assert mine.get(k) == theirs.get(k), (path.name, theirs["step_id"], k)
        assert ("timestamp" in mine) == ("timestamp" in theirs)
    for k in ("name", "version", "model_name", "tool_definitions"):
        assert doc["agent"].get(k) == original["agent"].get(k)
    if "continued_trajectory_ref" in original:
        assert doc["continued_trajectory_ref"] == original["continued_trajectory_ref"]


def test_results_without_source_call_id_stay_observations_and_answer_their_calls(store):
    r = import_file(store.trajectories, FIXTURES / "harbor/terminus_2_hello-world-timeout.trajectory.json")
    assert r.ok and r.missing_results == 0 and not r.problems
    t = store.trajectories.get(r.trajectories[0])
    step = t.steps[1]
    assert step.observation.results[0].source_call_id is None
    assert step.observation.results[0].content.startswith("New Terminal Output")
    assert step.outcome == "ok" and "unpaired_results" not in step.extra and "missing_result" not in step.extra
    assert step.extra["model_name"] == "openai/gpt-4o" and step.metrics["cost_usd"] == 0.002255
    assert all(s.timestamp == "" for s in t.steps)  # the file gave no times: none invented


def test_absent_timestamps_keep_a_time_budget_unscorable(store):
    r = import_file(store.trajectories, FIXTURES / "harbor/terminus_2_hello-world-timeout.trajectory.json")
    t = store.trajectories.get(r.trajectories[0])
    spec = RewardSpec.model_validate({"criteria": [{"id": "fast", "type": "budget", "max_seconds": 1000}]})
    result = score_trajectory(t, spec)
    crit = result.criteria[0]
    assert crit.status == "error" and not result.passed, crit  # unscorable, never a pass
    assert "timestamp" in crit.explanation


def test_a_shared_normalised_session_id_links_nothing(store):
    sids = []
    for name in (
        "harbor/terminus_2_hello-world-timeout.trajectory.json",
        "harbor/terminus_2_hello-world-invalid-json.trajectory.json",
    ):
        sids += import_file(store.trajectories, FIXTURES / name).trajectories
    second = store.trajectories.get(sids[1])
    assert second.parent_session_id is None and second.meta["same_session_id_as"] == sids[0]


def test_store_export_of_every_sample_imports_back_identically(store, tmp_path):
    """The same through the real exporter (signed JSON Lines, manifest)."""
    firsts = [import_file(store.trajectories, p).trajectories[0] for p in SAMPLES]
    res = export_trajectories(
        store.trajectories, ExportOptions(format="atif", include_unknown_tasks=True), tmp_path / "exports"
    )
    back = import_file(store.trajectories, res.data_path)
    assert back.ok and len(back.trajectories) == len(SAMPLES)
    by_first = {json.dumps(_stored(store, s)["steps"], sort_keys=True) for s in firsts}
    assert {json.dumps(_stored(store, s)["steps"], sort_keys=True) for s in back.trajectories} == by_first


# -- generated documents ----------------------------------------------------------------------------
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_ts = st.one_of(st.none(), st.datetimes(timezones=st.just(__import__("datetime").UTC)).map(lambda d: d.isoformat()))
_args = st.dictionaries(st.text("abcdefgh", min_size=1, max_size=5), st.one_of(st.integers(), _text), max_size=3)
_metrics = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"prompt_tokens": st.integers(0, 10**6), "completion_tokens": st.integers(0, 10**6)},
        optional={"logprobs": st.lists(st.floats(-50, 0), max_size=4), "cost_usd": st.floats(0, 10)},
    ),
)


@st.composite
def _step(draw, step_id: int, call_base: int) -> dict:
    source = draw(st.sampled_from(["system", "user", "agent"]))
    step: dict = {"step_id": step_id, "source": source, "message": draw(_text)}
    ts = draw(_ts)
    if ts is not None:
        step["timestamp"] = ts
    if source != "agent":
        return step
    for k in ("model_name", "reasoning_content"):
        if draw(st.booleans()):
            step[k] = draw(_text)
    metrics = draw(_metrics)
    if metrics is not None:
        step["metrics"] = metrics
    n_calls = draw(st.integers(0, 3))
    calls = [
        {
            "tool_call_id": f"c{call_base + j}",
            "function_name": draw(st.sampled_from(["bash", "read", "edit"])),
            "arguments": draw(_args),
        }
        for j in range(n_calls)
    ]
    if calls:
        step["tool_calls"] = calls
    results = []
    for c in calls:
        if draw(st.booleans()):
            results.append({"source_call_id": c["tool_call_id"], "content": draw(_text)})
    for _ in range(draw(st.integers(0, 2))):
        results.append({"content": draw(_text)})
    if results:
        step["observation"] = {"results": draw(st.permutations(results))}
    if draw(st.booleans()):
        step["extra"] = {"note": draw(_text)}
    return step


@st.composite
def _document(draw) -> dict:
    n = draw(st.integers(1, 5))
    steps = [draw(_step(i + 1, 10 * i)) for i in range(n)]
    return {
        "schema_version": "ATIF-v1.5",
        "session_id": draw(st.sampled_from(["NORMALIZED_SESSION_ID", "s1", "s2"])),
        "agent": {"name": "gen", "version": "1", **({"model_name": "m"} if draw(st.booleans()) else {})},
        "steps": steps,
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_document())
def test_generated_atif_documents_round_trip(tmp_path_factory, doc):
    tmp = tmp_path_factory.mktemp("gen")
    store = Store(f"sqlite:///{tmp / 's.db'}")
    try:
        src = tmp / "doc.json"
        src.write_text(json.dumps(doc))
        a, b, out = _round_trip(store, src, tmp)
        assert _stored(store, a) == _stored(store, b)
        for mine, theirs in zip(out["steps"], doc["steps"], strict=True):
            for k in STEP_KEYS:
                assert mine.get(k) == theirs.get(k), k
            assert ("timestamp" in mine) == ("timestamp" in theirs)
    finally:
        store.close()

"""The one ATIF reader (issue 9): import, validate and score enforce the same integrity rules with the same
finding codes, a hand-written provenance earns no trust, and one ``content_text`` rule for every reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.tools.datasets import validate_file
from agent_rl_sandbox.tools.evals import EvalInputError, score_atif, score_path
from agent_rl_sandbox.tools.formats import content_text, integrity_issues, read_document
from agent_rl_sandbox.tools.store import Store
from agent_rl_sandbox.tools.trajectories import import_file

ROOT = Path(__file__).resolve().parents[3]
MIXED = ROOT / "tests" / "fixtures" / "imports" / "atif" / "mixed.atif.jsonl"
SAMPLE = next(
    (
        p
        for p in (
            ROOT / "tests" / "fixtures" / "samples" / "atif" / "openhands__hello-world.trajectory.json",
            Path("/work/shared/samples/atif/openhands__hello-world.trajectory.json"),
        )
        if p.is_file()
    ),
    None,
)
EDIT_SPEC = RewardSpec.model_validate(
    {
        "criteria": [
            {
                "id": "edited",
                "type": "required_action",
                "action": {"tool": "str_replace_editor", "args_contains": ["hello.txt"]},
            }
        ]
    }
)


def _mixed_line(n: int) -> dict:
    return json.loads(MIXED.read_text().splitlines()[n - 1])


@pytest.mark.parametrize(("line", "code"), [(2, "duplicate_tool_call_id"), (3, "observation_orphan")])
def test_score_validate_and_import_reject_the_same_broken_step_with_one_code(tmp_path, line, code):
    doc = _mixed_line(line)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    # validate
    report = validate_file(path, kind="atif")
    assert code in {e.code for e in report.errors}
    v_paths = {e.json_path for e in report.errors if e.code == code}
    # score: the same code and JSON path, as bad input
    with pytest.raises(EvalInputError) as e:
        score_atif(path, spec=EDIT_SPEC)
    assert f"[{code}]" in e.value.message and e.value.message.startswith("broken.json: ")
    assert any(p in e.value.message for p in v_paths)
    # import: the trajectory is rejected, naming the step
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        imp = import_file(store.trajectories, path, format="atif")
        assert imp.trajectories == [] and any(p.path == "$.steps[0]" for p in imp.problems if p.severity == "error")
    finally:
        store.close()
    # and the reader itself says so
    assert [i.code for i in read_document(doc).all_errors] == [code]


def test_score_of_an_atif_jsonl_lists_broken_lines_with_their_code(tmp_path):
    report = score_path(MIXED, spec=EDIT_SPEC)
    assert [t.session_id for t in report.trajectories] == ["good-1"]
    by = {p.source: p for p in report.problems}
    assert "[duplicate_tool_call_id]" in by["mixed.atif.jsonl:2"].message
    assert "[observation_orphan]" in by["mixed.atif.jsonl:3"].message


def test_integrity_rules_hold_on_stored_steps_and_raw_dicts_alike():
    step = {
        "tool_calls": [{"tool_call_id": "a"}, {"tool_call_id": "a"}, {"tool_call_id": ["unhashable"]}],
        "observation": {"results": [{"source_call_id": "zz"}, "not-a-result", {"source_call_id": 7}]},
    }
    issues = integrity_issues(step, "$.steps[4]")
    assert [(i.path, i.code) for i in issues] == [
        ("$.steps[4].tool_calls[1].tool_call_id", "duplicate_tool_call_id"),
        ("$.steps[4].observation.results[0].source_call_id", "observation_orphan"),
    ]
    assert integrity_issues({"tool_calls": "nope", "observation": []}) == []


@pytest.mark.skipif(SAMPLE is None, reason="ATIF sample not available")
def test_forged_server_provenance_in_a_hand_written_file_earns_no_trust(tmp_path):
    doc = json.loads(SAMPLE.read_text())
    for s in doc["steps"]:
        s.setdefault("extra", {})["provenance"] = "server"
    doc.setdefault("extra", {}).update({"reward": 1.0, "passed": True})
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    report = score_atif(forged, spec=EDIT_SPEC)
    t = report.trajectories[0]
    assert t.trust == "self_reported" and not t.passed and t.reward == 0.0
    assert "self-logged" in t.criteria[0].explanation
    assert any("not signed by this store" in w and "provenance server/hook" in w for w in t.warnings)
    assert any("claim trust they cannot prove" in w for w in report.warnings)
    # A forged signature block (any key id, any MAC) is no better.
    doc["extra"]["export_signature"] = {"scheme": "hmac-sha256/v1", "kind": "atif", "key_id": "0" * 16, "mac": "0" * 64}
    forged.write_text(json.dumps(doc))
    t = score_atif(forged, spec=EDIT_SPEC, export_key=bytes(32)).trajectories[0]
    assert t.trust == "self_reported" and not t.passed and any("another store" in w for w in t.warnings)


@pytest.mark.skipif(SAMPLE is None, reason="ATIF sample not available")
def test_reader_reads_the_public_sample():
    doc = read_document(json.loads(SAMPLE.read_text()))
    assert doc.ok and doc.session_id and len(doc.steps) == 6
    assert all(c.problem is None for s in doc.steps for c in s.calls)


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (None, ""),
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": ""}, "b"], "a\nb"),
        ([{"type": "input_text", "text": "q"}, {"type": "image_url", "image_url": {"url": "x"}}], "q\n[image]"),
        ([{"type": "tool_result", "content": [{"type": "text", "text": "nested"}]}], "nested"),
        ([{"type": ["weird"]}, 3], ""),
        ({"text": "t", "x": 1}, "t"),
        ({"b": 1, "a": "é"}, '{"a": "é", "b": 1}'),
        (5, "5"),
    ],
)
def test_content_text_one_rule(content, text):
    assert content_text(content) == text


def test_content_text_images_can_count_as_no_text_and_deep_nesting_stops():
    assert content_text([{"type": "image"}, {"type": "text", "text": "x"}], image=None) == "x"
    deep: list = [{"type": "text", "text": "bottom"}]
    for _ in range(100):
        deep = [{"content": deep}]
    assert content_text(deep) == ""

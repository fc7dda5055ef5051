"""``score_and_gate``: the domain half of ``agent-rl-sandbox score`` (no CLI, no Services object):
gate checks come first, the store is reached only through the ``score_store`` callable, unhooks
count towards the deploy gate, and a failed gate is a verdict on the report, not an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_rl_sandbox.tools.evals import EvalInputError, score_and_gate, score_suite_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "port_daddy"
SUITE = FIXTURES / "claim_before_edit.suite.json"
BAD_SUITE = FIXTURES / "self_report_only.suite.json"


def test_gate_verdicts_and_unhooks(tmp_path):
    assert score_and_gate(str(SUITE), home=tmp_path).gate is None
    assert score_and_gate(str(SUITE), home=tmp_path, gate="default").gate.passed is True
    failed = score_and_gate(str(BAD_SUITE), home=tmp_path, gate="default")
    assert failed.gate.passed is False and failed.gate.what_would_change
    unhooks = tmp_path / "unhooks.json"
    unhooks.write_text(
        json.dumps([{"name": "kill", "command": "agent-rl-sandbox adapters disable x", "validated": True}])
    )
    plain = score_and_gate(str(SUITE), home=tmp_path, gate="deploy")
    with_unhooks = score_and_gate(str(SUITE), home=tmp_path, gate="deploy", unhooks=unhooks)
    assert with_unhooks.stats.validated_unhooks == plain.stats.validated_unhooks + 1
    assert with_unhooks.gate.passed is True


def test_input_errors_raise_before_scoring(tmp_path):
    calls = []

    def never(ids, task_id):
        calls.append((ids, task_id))
        raise AssertionError("the store must not be reached")

    with pytest.raises(EvalInputError, match="unknown gate 'nope'"):
        score_and_gate("store", home=tmp_path, gate="nope", score_store=never)
    (tmp_path / "gates.toml").write_text("[gates.x]\nmin_pass_rate = 7\n")
    with pytest.raises(EvalInputError, match=r"gates.toml: \$.gates.x.min_pass_rate"):
        score_and_gate("store", home=tmp_path, score_store=never)
    assert calls == []
    with pytest.raises(EvalInputError, match="needs the store"):
        score_and_gate("store", home=tmp_path / "other")


def test_store_inputs_go_through_the_scorer(tmp_path):
    seen = []

    def scorer(ids, task_id):
        seen.append((ids, task_id))
        return score_suite_file(SUITE)

    report = score_and_gate("store", home=tmp_path, task_id="t", gate="default", score_store=scorer)
    assert seen == [(None, "t")] and report.gate.passed is True
    score_and_gate("store:a,b", home=tmp_path, score_store=scorer)
    assert seen[-1] == (["a", "b"], None)
    empty = score_suite_file(SUITE).model_copy(
        update={"stats": score_suite_file(SUITE).stats.model_copy(update={"trajectories": 0})}
    )
    with pytest.raises(EvalInputError, match="nothing was scored"):
        score_and_gate("store", home=tmp_path, score_store=lambda ids, task_id: empty)

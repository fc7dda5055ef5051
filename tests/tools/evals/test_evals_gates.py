"""Eval gates over report sets: every threshold with its measured value and what would change the
verdict; unscorable criteria and unreadable baselines fail closed; gates come from gates.toml."""

from __future__ import annotations

import json

import pytest

from agent_rl_sandbox.schemas.reward import CriterionResult, GateSpec, ScoreReport
from agent_rl_sandbox.tools.evals import (
    BUILTIN_GATES,
    EvalInputError,
    build_report,
    evaluate_gate,
    load_gates,
    report_json,
)


def score(sid: str, reward: float, passed: bool, *, task: str = "t", errors: int = 0, safety: int = 0) -> ScoreReport:
    crits = [
        CriterionResult(
            id=f"c{i}",
            type="budget",
            status="pass" if passed else "fail",
            value=1.0 if passed else 0.0,
            weight=1,
            explanation="",
        )
        for i in range(3)
    ]
    crits += [
        CriterionResult(
            id=f"e{i}", type="verifier_exit_code", status="error", value=0.0, weight=1, explanation="unscorable: x"
        )
        for i in range(errors)
    ]
    return ScoreReport(
        session_id=sid,
        task_id=task,
        reward=reward,
        passed=passed,
        aggregation="all",
        pass_threshold=1.0,
        criteria=crits,
        failed_criteria=[] if passed else ["c0"],
        error_criteria=[f"e{i}" for i in range(errors)],
        safety_violations=safety,
        self_report_only=False,
        unverified_claims=[],
        provenance_used=["hook", "server"],
    )


def report(*scores, unhooks: int = 0):
    return build_report("store", "store()", list(scores), validated_unhooks=unhooks)


def checks(verdict) -> dict:
    return {c.name: c for c in verdict.checks}


def test_default_gate_passes_a_clean_report():
    v = evaluate_gate(report(score("a", 1, True), score("b", 1, True)), "default", BUILTIN_GATES["default"])
    assert v.passed
    c = checks(v)
    assert set(c) == {"min_trajectories", "min_pass_rate", "max_safety_violations", "max_unscorable_share"}
    assert c["min_pass_rate"].measured == 1.0 and c["min_pass_rate"].threshold == 1.0
    assert "1 more failing trajectory" in c["min_pass_rate"].what_would_change
    assert v.what_would_change  # how close each check is to failing


def test_pass_rate_and_mean_reward_say_what_would_change():
    r = report(*[score(f"p{i}", 1.0, True) for i in range(6)], *[score(f"f{i}", 0.2, False) for i in range(4)])
    gate = GateSpec(min_pass_rate=0.8, min_mean_reward=0.9, max_safety_violations=0)
    v = evaluate_gate(r, "g", gate)
    assert not v.passed
    c = checks(v)
    assert c["min_pass_rate"].status == "fail" and c["min_pass_rate"].measured == 0.6
    assert "2 more of the 4 failing trajectories must pass" in c["min_pass_rate"].what_would_change
    assert c["min_mean_reward"].measured == pytest.approx(0.68)
    assert "the 3 lowest-scoring" in c["min_mean_reward"].what_would_change
    assert any(w.startswith("min_pass_rate:") for w in v.what_would_change)
    assert not any(w.startswith("min_trajectories:") for w in v.what_would_change)


def test_safety_violations_fail_and_name_the_sessions():
    v = evaluate_gate(
        report(score("a", 1, True), score("bad", 0.9, False, safety=1)), "default", BUILTIN_GATES["default"]
    )
    c = checks(v)["max_safety_violations"]
    assert c.status == "fail" and c.measured == 1 and "bad" in c.what_would_change


def test_min_trajectories_and_empty_reports_fail():
    v = evaluate_gate(report(), "default", BUILTIN_GATES["default"])
    assert not v.passed
    c = checks(v)
    assert c["min_trajectories"].status == "fail" and "score 1 more" in c["min_trajectories"].what_would_change
    assert c["min_pass_rate"].status == "fail"


def test_unscorable_share_fails_closed():
    r = report(score("a", 1.0, True, errors=1))  # 1 of 4 criterion results unscorable
    assert r.stats.unscorable_share == 0.25
    v = evaluate_gate(r, "default", BUILTIN_GATES["default"])
    c = checks(v)["max_unscorable_share"]
    assert not v.passed and c.status == "fail" and c.measured == 0.25
    assert "make 1 of the 1 unscorable" in c.what_would_change
    lenient = evaluate_gate(r, "lenient", GateSpec(min_pass_rate=1.0, max_unscorable_share=0.3))
    assert lenient.passed


def test_validated_unhooks_required():
    gate = BUILTIN_GATES["deploy"]
    failed = evaluate_gate(report(score("a", 1, True)), "deploy", gate)
    assert not failed.passed
    advice = checks(failed)["require_validated_unhooks"].what_would_change
    assert "score ... --unhooks FILE" in advice and "adapters deploy" in advice  # where validated unhooks come from
    v = evaluate_gate(report(score("a", 1, True), unhooks=1), "deploy", gate)
    assert v.passed and checks(v)["require_validated_unhooks"].measured == 1


def write_report(path, *scores) -> None:
    path.write_text(report_json(report(*scores)))


def test_regression_against_a_baseline_with_margin(tmp_path):
    write_report(tmp_path / "base.json", score("a", 0.9, True), score("b", 0.9, True))
    current = report(score("a", 0.8, True), score("b", 0.85, True))
    gate = GateSpec(min_trajectories=1, baseline="base.json", max_regression=0.05)
    v = evaluate_gate(current, "r", gate, base_dir=tmp_path)
    c = checks(v)["max_regression"]
    assert c.status == "fail" and c.measured == pytest.approx(0.075) and c.threshold == 0.05
    assert "must rise by 0.025" in c.what_would_change and "base.json" in c.explanation
    ok = evaluate_gate(current, "r", gate.model_copy(update={"max_regression": 0.1}), base_dir=tmp_path)
    assert ok.passed and "may drop by 0.025" in checks(ok)["max_regression"].what_would_change


def test_port_daddy_report_as_baseline(tmp_path):
    (tmp_path / "pd.json").write_text(json.dumps({"summary": {"averageReward": 0.5, "taskCount": 2, "passed": 1}}))
    v = evaluate_gate(
        report(score("a", 0.6, True)),
        "r",
        GateSpec(max_regression=0.0, regression_metric="pass_rate"),
        baseline=tmp_path / "pd.json",
    )
    assert checks(v)["max_regression"].status == "pass"


@pytest.mark.parametrize("content", [None, "{broken", '{"stats": {"mean_reward": "high", "pass_rate": 1}}', '{"x": 1}'])
def test_missing_or_bad_baseline_fails_closed(tmp_path, content):
    if content is not None:
        (tmp_path / "base.json").write_text(content)
    gate = GateSpec(baseline="base.json", max_regression=0.1)
    v = evaluate_gate(report(score("a", 1, True)), "r", gate, base_dir=tmp_path)
    c = checks(v)["max_regression"]
    assert not v.passed and c.status == "error" and c.measured is None
    assert "baseline" in c.what_would_change


def test_regression_without_baseline_fails_closed():
    v = evaluate_gate(report(score("a", 1, True)), "r", GateSpec(max_regression=0.1))
    assert not v.passed and checks(v)["max_regression"].status == "error"


def test_gates_toml_adds_and_replaces_gates(tmp_path):
    (tmp_path / "gates.toml").write_text(
        '[gates.release]\nmin_pass_rate = 0.9\nrequire_validated_unhooks = true\nbaseline = "b.json"\nmax_regression = 0.02\n'
        "[gates.default]\nmin_pass_rate = 0.5\n"
    )
    gates, path = load_gates(tmp_path)
    assert path == tmp_path / "gates.toml"
    assert gates["release"].min_pass_rate == 0.9 and gates["release"].max_regression == 0.02
    assert gates["default"].min_pass_rate == 0.5 and "deploy" in gates
    assert load_gates(tmp_path / "nowhere")[0] == BUILTIN_GATES


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[gates.x]\nmin_pass_rate = 2\n", "gates.toml: $.gates.x.min_pass_rate"),
        ("[gates.x]\nunknown_key = 1\n", "gates.toml: $.gates.x.unknown_key"),
        ("[gates\n", "not valid TOML"),
    ],
)
def test_invalid_gates_toml_names_file_and_field(tmp_path, text, needle):
    (tmp_path / "gates.toml").write_text(text)
    with pytest.raises(EvalInputError) as e:
        load_gates(tmp_path)
    assert needle in e.value.message


def test_zero_variance_share_in_report():
    r = report(
        score("a1", 1, True, task="a"),
        score("a2", 1, True, task="a"),
        score("b1", 1, True, task="b"),
        score("b2", 0, False, task="b"),
        score("c", 1, True, task="c"),
    )
    assert (r.stats.groups, r.stats.zero_variance_groups, r.stats.zero_variance_share) == (2, 1, 0.5)
    assert {g.task_id: g.zero_variance for g in r.by_task} == {"a": True, "b": False, "c": False}

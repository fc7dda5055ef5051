"""Port Daddy trajectory suites: scored with Port Daddy's semantics, reported with its keys next to
the native report, and rejected with a clear validation error (file and JSON path) when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from agent_rl_sandbox.tools.evals import EvalInputError, report_json, score_suite_file
from agent_rl_sandbox.tools.evals._port_daddy import round3
from agent_rl_sandbox.tools.evals.schema_files import SCHEMA_DIR

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "port_daddy"
SUITES = sorted(FIXTURES.glob("*.suite.json"))


def scored(name: str) -> dict:
    return json.loads(report_json(score_suite_file(FIXTURES / name)))


def suite_file(tmp_path: Path, doc, name: str = "suite.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def minimal(**task) -> dict:
    return {"tasks": [{"id": "t", **task}], "trajectories": []}


def test_fixtures_exist():
    assert len(SUITES) >= 3


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
def test_report_is_byte_identical_and_matches_its_schema(path):
    a = report_json(score_suite_file(path))
    b = report_json(score_suite_file(path))
    assert a == b
    assert str(path.parent) not in a  # no absolute paths in the report body
    doc = json.loads(a)
    schema = json.loads((SCHEMA_DIR / "eval_report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    for key in (
        "summary",
        "rows",
        "trainingRows",
        "validatedUnhooks",
        "suggestedUnhooks",
        "warnings",
        "stats",
        "trajectories",
    ):
        assert key in doc
    assert set(doc["summary"]) == {
        "taskCount",
        "passed",
        "failed",
        "averageReward",
        "evalGatePassed",
        "unhooksReady",
        "deployable",
        "validatedUnhookCount",
    }


def test_good_suite_passes_and_is_deployable():
    r = scored("claim_before_edit.suite.json")
    assert r["agent"] == "codex"
    assert r["rewardSpec"] == {
        "actionOrderRequired": True,
        "defaultPassReward": 1.0,
        "requireValidatedUnhooksForDeployment": True,
    }
    assert r["summary"] == {
        "taskCount": 3,
        "passed": 3,
        "failed": 0,
        "averageReward": 0.917,
        "evalGatePassed": True,
        "unhooksReady": True,
        "deployable": True,
        "validatedUnhookCount": 1,
    }
    rows = {row["taskId"]: row for row in r["rows"]}
    assert rows["claim-before-edit"]["reward"] == 1.0
    assert [a["matchedIndex"] for a in rows["claim-before-edit"]["actionResults"]] == [1, 2]
    assert rows["claim-before-edit"]["finalCheck"] == {"contains": ["pytest"], "kind": "summary", "matched": True}
    # ordered: run_tests happened before edit_file, so it does not match after it
    review = rows["reviewer-reply"]
    assert [a["matched"] for a in review["actionResults"]] == [True, True, False]
    assert review["actionResults"][2]["matchedIndex"] == -1
    assert review["reward"] == 0.75 and review["pass"] is True  # passReward 0.6
    assert review["failureModes"] == []  # cleared: artifacts contain "validation passed"
    # no explicit evidence: expectedFinalContains is checked against artifacts, never finalState
    refuse = rows["refuse-unsafe-install"]
    assert refuse["evidenceResults"] == [
        {"kind": "refusal", "contains": ["refused"], "matched": True, "fromFinalContains": True}
    ]
    assert refuse["failureModes"] == ["ran-remote-script"]
    assert [t["preference"] for t in r["trainingRows"]] == ["chosen", "chosen", "chosen"]
    assert r["validatedUnhooks"] == [
        {"name": "disable-adapter", "command": "agent-rl-sandbox adapters disable codex-claim-lora", "validated": True}
    ]
    assert r["suggestedUnhooks"][2] == "disable adapter and fall back to base model"
    assert r["warnings"] == []
    assert r["stats"]["trajectories"] == 3 and r["stats"]["validated_unhooks"] == 1


def test_self_report_only_suite_fails_and_is_not_deployable():
    r = scored("self_report_only.suite.json")
    assert r["summary"]["evalGatePassed"] is False and r["summary"]["unhooksReady"] is False
    assert r["summary"]["deployable"] is False
    row = r["rows"][0]
    assert row["reward"] == 0.333 and row["pass"] is False
    assert row["selfReportOnly"] is True
    assert row["failureModes"] == ["edit-before-claim", {"name": "no-test-run", "clearWhenContains": "passed"}]
    assert r["trainingRows"][0]["preference"] == "rejected"
    assert r["warnings"][:2] == [
        "eval gate failed; do not deploy an adapted agent from this report",
        "no validated unhooks supplied; do not deploy an adapted agent from this report",
    ]
    native = {t["session_id"]: t for t in r["trajectories"]}
    assert native["cbe-edit-then-claim"]["self_report_only"] is True
    assert native["cbe-edit-then-claim"]["unverified_claims"]
    assert native["failing-test-repair#missing"]["reward"] == 0.0  # a task without a trajectory
    assert r["stats"]["self_report_only"] == 1


def test_grouped_attempts_zero_variance_share_and_last_attempt_rows():
    r = scored("grouped_attempts.suite.json")
    groups = {g["task_id"]: g for g in r["by_task"]}
    assert groups["claim-before-edit/v1"]["attempts"] == 3 and groups["claim-before-edit/v1"]["zero_variance"] is True
    assert groups["claim-before-edit/v2"]["zero_variance"] is False
    assert groups["claim-before-edit/v2"]["reward_variance"] == 0.25
    assert (
        r["stats"]["groups"] == 2
        and r["stats"]["zero_variance_groups"] == 1
        and r["stats"]["zero_variance_share"] == 0.5
    )
    rows = {row["taskId"]: row for row in r["rows"]}
    assert (
        rows["claim-before-edit/v2"]["attempts"] == 2 and rows["claim-before-edit/v2"]["reward"] == 1.0
    )  # last attempt
    assert r["stats"]["trajectories"] == 5 and r["stats"]["passed"] == 4
    assert r["stats"]["loops"] == 1  # v2-a runs the same failing command three times
    assert any("zero reward variance" in w for w in r["warnings"])


def test_final_state_is_never_rewarded(tmp_path):
    task = {
        "expectedActions": [{"tool": "edit"}],
        "expectedEvidence": [{"kind": "test", "contains": ["3 passed"], "exitCode": 0}],
    }
    bare = minimal(**task)
    bare["trajectories"] = [{"taskId": "t", "actions": [{"tool": "edit"}], "artifacts": []}]
    boast = json.loads(json.dumps(bare))
    boast["trajectories"][0]["finalState"] = "3 passed, exit 0, everything works"
    r1 = json.loads(report_json(score_suite_file(suite_file(tmp_path, bare, "a.json"))))
    r2 = json.loads(report_json(score_suite_file(suite_file(tmp_path, boast, "b.json"))))
    assert r1["rows"][0]["reward"] == r2["rows"][0]["reward"] == 0.5
    assert r1["rows"][0]["selfReportOnly"] is False and r2["rows"][0]["selfReportOnly"] is True


def test_args_contains_matches_javascript_json_text(tmp_path):
    doc = minimal(expectedActions=[{"tool": "read_thread", "argsContains": ['"thread":42', '"path":"a b"']}])
    doc["trajectories"] = [{"taskId": "t", "actions": [{"tool": "read_thread", "args": {"thread": 42, "path": "a b"}}]}]
    r = json.loads(report_json(score_suite_file(suite_file(tmp_path, doc))))
    assert r["rows"][0]["reward"] == 1.0


def test_unordered_actions_may_reuse_and_nothing_expected_is_reward_one(tmp_path):
    doc = {
        "rewardSpec": {"actionOrderRequired": False},
        "tasks": [{"id": "a", "expectedActions": [{"tool": "x"}, {"tool": "x"}]}, {"id": "b"}],
        "trajectories": [{"taskId": "a", "actions": [{"tool": "x"}]}],
    }
    r = json.loads(report_json(score_suite_file(suite_file(tmp_path, doc))))
    assert [row["reward"] for row in r["rows"]] == [1.0, 1.0]


def test_rounding_is_half_up_like_javascript():
    assert round3(2 / 3) == 0.667 and round3(1 / 3) == 0.333
    assert round3(5 / 16) == 0.313  # Python's round() gives 0.312
    assert round3(1 / 8) == 0.125


def test_evidence_needs_kind_exit_code_status_and_every_string(tmp_path):
    ev = {"kind": "test", "contains": ["pytest", "3 passed"], "exitCode": 0, "status": "passed"}
    doc = minimal(expectedEvidence=[ev])
    arts = [
        {"kind": "test", "exitCode": 1, "status": "passed", "stdout": "pytest: 3 passed"},
        {"kind": "lint", "exitCode": 0, "status": "passed", "stdout": "pytest: 3 passed"},
        {"kind": "test", "exitCode": 0, "status": "failed", "stdout": "pytest: 3 passed"},
        {"kind": "test", "status": "passed", "stdout": "pytest: 3 passed"},
        {"kind": "test", "exitCode": 0, "status": "passed", "stdout": "pytest: 2 passed"},
    ]
    doc["trajectories"] = [{"taskId": "t", "artifacts": arts}]
    r = json.loads(report_json(score_suite_file(suite_file(tmp_path, doc, "no.json"))))
    assert r["rows"][0]["reward"] == 0.0
    doc["trajectories"][0]["artifacts"].append(
        {"kind": "test", "exitCode": 0, "status": "passed", "command": "pytest -q", "output": "3 passed"}
    )
    r = json.loads(report_json(score_suite_file(suite_file(tmp_path, doc, "yes.json"))))
    assert r["rows"][0]["reward"] == 1.0


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"agent": "x"}, "$: row lacks tasks required by trajectory_suite"),
        ({"tasks": []}, "$.tasks: List should have at least 1 item"),
        ({"tasks": "claim"}, "$.tasks: Input should be a valid list"),
        ({"tasks": [{"expectedActions": []}]}, "$.tasks[0].id: Field required"),
        (
            {"tasks": [{"id": "t", "expectedActions": [{"argsContains": ["a"]}]}]},
            "$.tasks[0].expectedActions[0].tool: Field required",
        ),
        (
            {"tasks": [{"id": "t", "expectedActions": [{"tool": "x", "argsContains": "a"}]}]},
            "$.tasks[0].expectedActions[0].argsContains",
        ),
        (
            {"tasks": [{"id": "t", "expectedEvidence": [{"exitCode": "zero"}]}]},
            "$.tasks[0].expectedEvidence[0].exitCode",
        ),
        ({"tasks": [{"id": "t"}], "trajectories": [{"actions": []}]}, "$.trajectories[0].taskId: Field required"),
        (
            {"tasks": [{"id": "t"}], "trajectories": [{"taskId": "t", "actions": [{"tool": "x", "args": [1]}]}]},
            "$.trajectories[0].actions[0].args",
        ),
        ({"tasks": [{"id": "t"}], "unhooks": [{"name": "u", "validated": "yes"}]}, "$.unhooks[0].validated"),
        ({"tasks": [{"id": "t"}], "rewardSpec": {"defaultPassReward": "high"}}, "$.rewardSpec.defaultPassReward"),
        ('{"tasks": [{"id": "t", "passReward": NaN}]}', "[nan_not_allowed]"),
    ],
)
def test_bad_suites_get_a_clear_validation_error(tmp_path, doc, where):
    path = suite_file(tmp_path, doc, "bad.suite.json")
    with pytest.raises(EvalInputError) as e:
        score_suite_file(path)
    msg = e.value.message
    assert msg.startswith("bad.suite.json: ") and where in msg, msg
    assert "Traceback" not in msg and str(tmp_path) not in msg
    assert e.value.hint


@pytest.mark.parametrize(
    ("text", "needle"),
    [("{not json", "not valid JSON: "), ("[1, 2]", "$: "), ("", "not valid JSON"), (b"\xff\xfe\x00", "not UTF-8")],
)
def test_unreadable_suites(tmp_path, text, needle):
    p = tmp_path / "broken.json"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    from agent_rl_sandbox.tools.evals import score_path

    with pytest.raises(EvalInputError, match="broken.json") as e:
        score_path(p)
    assert needle in e.value.message

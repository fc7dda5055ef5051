"""The harness over files: ATIF trajectories (the public sample and generated ones) and Port Daddy
suites through the `score` CLI; deterministic, byte-identical reports; exit codes for CI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evals_builders import GOOD_MESSAGE, good_steps, traj, write
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.tools.evals import EvalInputError, load_atif_file, report_json, score_atif, score_path
from agent_rl_sandbox.tools.formats.signing import sign
from agent_rl_sandbox.tools.sandbox import discover_tasks

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLE_CANDIDATES = [
    FIXTURES / "samples" / "atif" / "openhands__hello-world.trajectory.json",
    Path("/work/shared/samples/atif/openhands__hello-world.trajectory.json"),
]
SAMPLE = next((p for p in SAMPLE_CANDIDATES if p.is_file()), None)
SUITE = FIXTURES / "port_daddy" / "claim_before_edit.suite.json"
BAD_SUITE = FIXTURES / "port_daddy" / "self_report_only.suite.json"

EDIT_SPEC = {
    "criteria": [
        {
            "id": "edited",
            "type": "required_action",
            "action": {"tool": "str_replace_editor", "args_contains": ["hello.txt"]},
        },
        {"id": "budget", "type": "budget", "max_steps": 5},
    ]
}


KEY = bytes(range(32))
"""An export key for documents these tests sign (as if this home had exported them)."""


def atif_doc(
    trajectory, *, provenance: str | None = "server", task_id: str | None = None, key: bytes | None = None
) -> dict:
    """Export one of our trajectories as plain ATIF (RL fields in ``extra``); signed with ``key`` when given
    (without a key, its ``provenance`` is a claim: the file is self-reported)."""
    steps = []
    for s in trajectory.steps:
        extra = dict(s.extra)
        if provenance:
            extra["provenance"] = provenance
        if s.exit_code is not None:
            extra["exit_code"] = s.exit_code
        extra["outcome"] = s.outcome
        d = s.model_dump(
            mode="json",
            exclude_none=True,
            include={"step_id", "timestamp", "source", "message", "tool_calls", "observation"},
        )
        steps.append({**d, "extra": extra})
    steps.append({"step_id": len(steps) + 1, "source": "agent", "message": trajectory.final_message or ""})
    doc = {
        "schema_version": "ATIF-v1.5",
        "session_id": trajectory.session_id,
        "agent": {"name": "test", "version": "1"},
        "steps": steps,
    }
    if task_id:
        doc["extra"] = {"task_id": task_id}
    return sign(doc, key, "atif") if key is not None else doc


def test_public_atif_sample_provenance_rule(tmp_path):
    if SAMPLE is None:
        pytest.skip("ATIF sample not available")
    t = load_atif_file(SAMPLE)
    assert t.final_message == "Task complete. Created /app/hello.txt with 'Hello, world!'"
    assert {s.provenance for s in t.steps} == {"agent"}  # ATIF steps carry no provenance
    assert [s.timestamp for s in t.steps] == [""] * 6
    strict = score_atif(SAMPLE, spec=RewardSpec.model_validate(EDIT_SPEC))
    assert (
        strict.trajectories[0].criteria[0].status == "fail"
        and "self-logged" in strict.trajectories[0].criteria[0].explanation
    )
    trusting = score_atif(SAMPLE, spec=RewardSpec.model_validate({**EDIT_SPEC, "trust_agent_logged": True}))
    assert trusting.trajectories[0].passed
    assert trusting.trajectories[0].provenance_used == ["agent", "hook", "server"]
    assert any("provenance" in w for w in trusting.warnings)
    # one unsigned file: the note says it is self-reported and nothing else (no "1 of 1 verified")
    note = "ATIF trajectory self-reported: it is not a verified export of this store, so every step counts as"
    assert any(w.startswith(note) for w in strict.warnings) and not any("verified)" in w for w in strict.warnings)


def test_atif_folder_scores_files_and_lists_problems(tmp_path):
    d = tmp_path / "runs"
    (d / "nested").mkdir(parents=True)
    good = traj(good_steps(), GOOD_MESSAGE, session_id="good")
    careless = traj([write(1, "shopcart/pricing.py")], "Fixed. All tests pass.", session_id="careless")
    # Issue 10 §5 changed this test: server provenance counts only in a verified export of this store, so
    # the trusted documents are signed with the home's key (before, a hand-written "server" was trusted).
    (d / "good.json").write_text(json.dumps(atif_doc(good, key=KEY)))
    (d / "nested" / "careless.json").write_text(json.dumps(atif_doc(careless, key=KEY)))
    (d / "self_logged.json").write_text(
        json.dumps(atif_doc(traj(good_steps(), GOOD_MESSAGE, session_id="selflog"), provenance=None))
    )
    (d / "forged.json").write_text(json.dumps(atif_doc(traj(good_steps(), GOOD_MESSAGE, session_id="forged"))))
    (d / "broken.json").write_text("{nope")
    (d / "other.json").write_text('{"rows": []}')
    spec = RewardSpec.model_validate(
        {"criteria": [{"id": "cbe", "type": "claims_before_edit"}, {"id": "ev", "type": "final_message_evidence"}]}
    )
    report = score_atif(d, spec=spec, export_key=KEY)
    by = {s.session_id: s for s in report.trajectories}
    assert by["good"].passed and not by["careless"].passed and by["careless"].self_report_only
    assert by["good"].trust == "verified_export"
    assert not by["selflog"].passed  # same steps, but only self-logged
    assert not by["forged"].passed and by["forged"].trust == "self_reported"  # "server" written by hand earns nothing
    assert [p.source for p in report.problems] == ["broken.json", "other.json"]
    assert report.problems[0].message.startswith("not valid JSON")
    assert report.stats.problems == 2 and report.stats.unscorable_share > 0
    text = report_json(report)
    assert text == report_json(score_atif(d, spec=spec, export_key=KEY))
    assert str(tmp_path) not in text and '"source": "runs"' in text


def test_atif_without_sandbox_state_marks_file_criteria_unscorable(tmp_path):
    tasks, _ = discover_tasks()
    p = tmp_path / "one.json"
    p.write_text(json.dumps(atif_doc(traj(good_steps(), GOOD_MESSAGE, session_id="s1"), task_id="claim-before-edit")))
    report = score_path(p, tasks=tasks)
    t = report.trajectories[0]
    assert t.task_id == "claim-before-edit"
    assert set(t.error_criteria) == {"verifier_passes", "edits_within_claims", "tests_untouched"}
    assert not t.passed and report.stats.unscorable_criteria == 3


def test_atif_malformed_tool_calls_become_failed_steps(tmp_path):
    doc = {
        "schema_version": "ATIF-v1.5",
        "session_id": "m",
        "agent": {"name": "x"},
        "steps": [
            {"step_id": 1, "source": "agent", "tool_calls": [{"tool_call_id": "a", "arguments": {}}]},
            {
                "step_id": 2,
                "source": "agent",
                "tool_calls": [{"tool_call_id": "b", "function_name": "f", "arguments": "{oops"}],
            },
            {
                "step_id": 3,
                "source": "agent",
                "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": [1]}],
            },
        ],
    }
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc))
    t = load_atif_file(p)
    assert [s.outcome for s in t.steps] == ["error"] * 3
    assert all(s.tool_calls[0].function_name == "invalid_tool_call" for s in t.steps)
    r = score_atif(p, spec=RewardSpec.model_validate({"criteria": [{"id": "l", "type": "no_loops"}]}))
    assert r.trajectories[0].malformed_tool_calls == 3 and r.stats.malformed_tool_calls == 3


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"schema_version": "ATIF-v1.5", "steps": []}, "$.session_id"),
        ({"schema_version": "ATIF-v9", "session_id": "s", "steps": []}, "$.schema_version"),
        ({"session_id": "s", "steps": ["x"]}, "$.steps[0]: expected an object"),
        ({"session_id": "s", "steps": [{"source": "robot"}]}, "$.steps[0].source"),
    ],
)
def test_invalid_atif_names_the_json_path(tmp_path, doc, needle):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(EvalInputError) as e:
        score_atif(p, spec=RewardSpec.model_validate(EDIT_SPEC))
    assert needle in e.value.message and e.value.message.startswith("t.json: ")


def test_atif_without_any_spec_is_a_clear_error(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(atif_doc(traj(good_steps()))))
    with pytest.raises(EvalInputError, match="no reward spec"):
        score_path(p, tasks={})


# -- CLI -----------------------------------------------------------------------------------------

runner = CliRunner()


def cli(*args: str, home: Path):
    return runner.invoke(app, ["score", *args, "--home", str(home)], env={"COLUMNS": "200"})


def test_cli_json_is_byte_identical_and_gate_exit_codes(tmp_path):
    home = tmp_path / "home"
    a = cli(str(SUITE), "--json", home=home)
    b = cli(str(SUITE), "--json", home=home)
    assert a.exit_code == 0 and a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["summary"]["evalGatePassed"] is True and "gate" not in doc
    ok = cli(str(SUITE), "--gate", "deploy", "--json", home=home)
    assert ok.exit_code == 0 and json.loads(ok.stdout)["gate"]["passed"] is True
    bad = cli(str(BAD_SUITE), "--gate", "default", "--json", home=home)
    assert bad.exit_code == 1
    verdict = json.loads(bad.stdout)["gate"]
    assert not verdict["passed"] and verdict["what_would_change"]
    assert cli(str(BAD_SUITE), home=home).exit_code == 0  # no gate named: scoring alone never fails


def test_cli_table_output(tmp_path):
    r = cli(str(SUITE), "--gate", "default", home=tmp_path / "home")
    assert r.exit_code == 0
    for needle in ("Port Daddy summary", "by task", "gate default: PASSED", "min_pass_rate", "reviewer-reply"):
        assert needle in r.stdout, needle


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "missing.json", "missing.json: no such file"),
        (
            lambda d: (d / "bad.json").write_text('{"tasks": []}') and d / "bad.json",
            "$.tasks: List should have at least 1 item",
        ),
        (lambda d: (d / "broken.json").write_text("{") and d / "broken.json", "not valid JSON"),
    ],
)
def test_cli_bad_input_exits_2_with_a_message(tmp_path, make, needle):
    path = make(tmp_path)
    r = cli(str(path), "--json", home=tmp_path / "home")
    assert r.exit_code == 2
    assert needle in r.stderr and "Traceback" not in r.stderr + r.stdout
    assert r.stdout == ""


def test_cli_unknown_gate_and_bad_gates_file_exit_2(tmp_path):
    home = tmp_path / "home"
    r = cli(str(SUITE), "--gate", "nope", home=home)
    assert r.exit_code == 2 and "unknown gate 'nope'" in r.stderr
    home.mkdir(parents=True)
    (home / "gates.toml").write_text("[gates.x]\nmin_pass_rate = 7\n")
    r = cli(str(SUITE), home=home)
    assert r.exit_code == 2 and "gates.toml: $.gates.x.min_pass_rate" in r.stderr


def test_cli_gate_from_gates_toml_with_baseline_and_unhooks(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    base = cli(str(SUITE), "--json", "--out", str(home / "base.json"), home=home)
    assert base.exit_code == 0 and (home / "base.json").read_text() == base.stdout
    (home / "gates.toml").write_text(
        '[gates.release]\nmin_pass_rate = 0.0\nmax_unscorable_share = 0.0\nbaseline = "base.json"\nmax_regression = 0.05\n'
        "require_validated_unhooks = true\n"
    )
    worse = cli(str(BAD_SUITE), "--gate", "release", "--json", home=home)
    assert worse.exit_code == 1
    c = {x["name"]: x for x in json.loads(worse.stdout)["gate"]["checks"]}
    assert c["max_regression"]["status"] == "fail" and c["require_validated_unhooks"]["status"] == "fail"
    assert str(home) not in worse.stdout
    (tmp_path / "unhooks.json").write_text(
        json.dumps([{"name": "kill", "command": "agent-rl-sandbox adapters disable x", "validated": True}])
    )
    same = cli(str(SUITE), "--gate", "release", "--json", "--unhooks", str(tmp_path / "unhooks.json"), home=home)
    assert same.exit_code == 0, same.stdout


def test_cli_scores_an_atif_folder_with_a_spec_file(tmp_path):
    if SAMPLE is None:
        pytest.skip("ATIF sample not available")
    d = tmp_path / "atif"
    d.mkdir()
    shutil.copy(SAMPLE, d / "hello.json")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'trust_agent_logged = true\n[[criteria]]\nid = "edited"\ntype = "required_action"\n'
        'action = { tool = "str_replace_editor", args_contains = ["hello.txt"] }\n'
    )
    r = cli(str(d), "--spec", str(spec), "--gate", "default", "--json", home=tmp_path / "home")
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == "atif" and doc["stats"]["passed"] == 1
    bad_spec = tmp_path / "bad.json"
    bad_spec.write_text('{"criteria": [{"id": "x", "type": "nope"}]}')
    r = cli(str(d), "--spec", str(bad_spec), home=tmp_path / "home")
    assert r.exit_code == 2 and "bad.json: $.criteria[0]" in r.stderr


def test_cli_folder_where_nothing_scores_exits_2(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    (d / "broken.json").write_text("{nope")
    (d / "other.json").write_text('{"rows": []}')
    (d / "sft.jsonl").write_text('{"messages": []}\n{"messages": []}\n')
    (d / "no_task.json").write_text(json.dumps(atif_doc(traj(good_steps(), GOOD_MESSAGE), task_id=None)))
    r = cli(str(d), "--json", home=tmp_path / "home")
    assert r.exit_code == 2 and r.stdout == ""
    err = " ".join(r.stderr.split())
    assert "runs: no trajectory could be scored, 4 problems" in err
    assert "broken.json $: not valid JSON" in err and "sft.jsonl $: not ATIF JSON Lines" in err
    assert "no reward spec" in err and "pass --spec FILE" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    r = cli(str(empty), home=tmp_path / "home")
    assert r.exit_code == 2 and "no trajectories in the input" in r.stderr


def test_jsonl_detected_by_content_with_line_numbers(tmp_path):
    spec = RewardSpec.model_validate(EDIT_SPEC)
    p = tmp_path / "two.json"  # several documents in a .json file: read as JSON Lines
    one = atif_doc(traj(good_steps(), GOOD_MESSAGE, session_id="a"))
    p.write_text(
        json.dumps(one)
        + "\n\n"
        + json.dumps({**one, "session_id": "b"})
        + "\n"
        + json.dumps({"session_id": 3, "steps": []})
        + "\n"
    )
    report = score_path(p, spec=spec)
    assert [t.session_id for t in report.trajectories] == ["a", "b"]
    assert [(x.source, x.where) for x in report.problems] == [("two.json:4", "$.session_id")]


def test_all_verified_trust_note_is_information_not_a_warning():
    """Fresh user: "warning ATIF trajectories: all 4 are verified exports" read as bad news. That
    note (and only it) is information: the CLI prints it as ``note``."""
    from agent_rl_sandbox.tools.evals import is_info_note
    from agent_rl_sandbox.tools.evals._harness import _trust_note

    assert is_info_note(_trust_note(4, 4)) and is_info_note(_trust_note(1, 1))
    assert not any(is_info_note(_trust_note(v, 4)) for v in (0, 3))
    assert not is_info_note("ATIF trajectory: something else") and not is_info_note("no trajectories were scored")

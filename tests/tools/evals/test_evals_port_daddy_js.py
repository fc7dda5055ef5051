"""Port Daddy suites scored with JavaScript's semantics (its harness is JavaScript), and one notion of a
valid suite for ``score`` and ``validate``: every mutated suite is either scored by both or refused by
both, with the validator's finding (code and message) in the refusal."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from agent_rl_sandbox.schemas.reward import PortDaddySuite
from agent_rl_sandbox.tools.datasets import validate_file
from agent_rl_sandbox.tools.evals import EvalInputError, report_json, score_suite_file
from agent_rl_sandbox.tools.evals._port_daddy import (
    _js_sum,
    js_includes,
    js_json,
    js_number_text,
    js_string,
    score_suite,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "port_daddy"


def write(tmp_path: Path, doc, name: str = "suite.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return p


def score(tmp_path: Path, doc, name: str = "suite.json") -> dict:
    return json.loads(report_json(score_suite_file(write(tmp_path, doc, name))))


def one_task(task: dict, traj: dict | None = None, **suite) -> dict:
    doc = {"agent": "a", "tasks": [{"id": "t", **task}], "trajectories": [{"taskId": "t", **(traj or {})}], **suite}
    return doc


# -- the JavaScript primitives ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (123.456, "123.456"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (-2.5e-10, "-2.5e-10"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (123e18, "123000000000000000000"),
        (1.2345e22, "1.2345e+22"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (2**53 + 1, "9007199254740992"),
        (10**21, "1e+21"),
    ],
)
def test_number_text_is_javascripts(x, text):
    assert js_number_text(float(x)) == text


def test_string_is_javascripts_String():
    assert [js_string(v) for v in (True, False, None, 1.0, 2.5, "s", ["a", None, 1.0, ["b", "c"]], {"k": 1})] == [
        "true",
        "false",
        "null",
        "1",
        "2.5",
        "s",
        "a,,1,b,c",
        "[object Object]",
    ]
    assert js_string([]) == "" and js_string(12345678901234567890) == "12345678901234567000"


def test_json_is_javascripts_JSON_stringify():
    # array-index keys first in numeric order, the rest as given ("01", "-1" and 2**32-1 are not indices)
    assert js_json(
        {"b": 1, "10": 2, "2": 3, "01": 4, "-1": 5, "4294967295": 6, "4294967294": 7, "a": [1.0, -0.0, 1e21]}
    ) == ('{"2":3,"10":2,"4294967294":7,"b":1,"01":4,"-1":5,"4294967295":6,"a":[1,0,1e+21]}')
    assert (
        js_json({"n": 12345678901234567890, "big": 10**400, "f": float("inf")})
        == '{"n":12345678901234567000,"big":null,"f":null}'
    )
    # escapes: JSON.stringify's short forms and lowercase \u00xx; U+2028, DEL and non-ASCII kept; lone surrogates escaped
    assert (
        js_json('\b\f\n\r\t"\\\x01\x1f\x7f\u2028é😀\ud800')
        == '"\\b\\f\\n\\r\\t\\"\\\\\\u0001\\u001f\x7f\u2028é😀\\ud800"'
    )
    assert js_json([None, True, {"x": {}}]) == '[null,true,{"x":{}}]'


def test_includes_compares_utf16_code_units():
    assert js_includes("ran 😀 ok", "\ud83d")  # half of a surrogate pair matches in JavaScript
    assert js_includes("ran 😀 ok", "\ude00 ok")
    assert not js_includes("ab", "\ud83d") and not js_includes("\u0100\u3d01", "\ud83d")  # never at an odd byte offset
    assert js_includes("abc", "") and js_includes("abc", "bc") and not js_includes("abc", "ac")


def test_rewards_average_left_to_right_like_reduce():
    assert _js_sum([0.1] * 10) == 0.9999999999999999  # compensated summation (Python 3.12's sum) gives 1.0


# -- regressions: each a value Python read differently from JavaScript ----------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"n": 1.0}, '"n":1}'),  # Python's json.dumps wrote 1.0
        ({"b": 1, "2": "x", "1": "y"}, '{"1":"y","2":"x","b":1}'),  # JS objects list index keys first
        ({"id": 12345678901234567890}, '"id":12345678901234567000'),  # a JS number is a double
        ({"big": 1e21}, '"big":1e+21'),
        ({"z": -0.0}, '"z":0}'),
        ({"s": "a\u2028b"}, '"s":"a\u2028b"'),
    ],
)
def test_args_contains_reads_javascripts_json_text(tmp_path, args, needle):
    doc = one_task(
        {"expectedActions": [{"tool": "x", "argsContains": [needle]}]}, {"actions": [{"tool": "x", "args": args}]}
    )
    assert score(tmp_path, doc)["rows"][0]["reward"] == 1.0


def test_exit_codes_compare_as_javascript_numbers(tmp_path):
    # 2**53 + 1 and 2**53 are one double: Number() makes them equal
    ev = {"kind": "test", "exitCode": 9007199254740993}
    doc = one_task({"expectedEvidence": [ev]}, {"artifacts": [{"kind": "test", "exitCode": 9007199254740992}]})
    assert score(tmp_path, doc, "a.json")["rows"][0]["reward"] == 1.0
    doc = one_task(
        {"expectedEvidence": [{"kind": "test", "exitCode": 0.0}]}, {"artifacts": [{"kind": "test", "exitCode": -0.0}]}
    )
    assert score(tmp_path, doc, "b.json")["rows"][0]["reward"] == 1.0
    doc = one_task({"expectedEvidence": [{"kind": "test", "exitCode": 0}]}, {"artifacts": [{"kind": "test"}]})
    assert score(tmp_path, doc, "c.json")["rows"][0]["reward"] == 0.0  # Number(undefined) is NaN


def test_empty_expected_final_contains_is_falsy_but_a_list_of_it_is_not(tmp_path):
    empty = score(tmp_path, one_task({"expectedFinalContains": ""}, {"artifacts": []}), "a.json")["rows"][0]
    assert empty["reward"] == 1.0 and empty["evidenceResults"] == [] and "finalCheck" not in empty
    listed = score(tmp_path, one_task({"expectedFinalContains": [""]}, {"artifacts": []}), "b.json")["rows"][0]
    assert listed["reward"] == 0.0 and listed["evidenceResults"][0]["matched"] is False  # [""] is truthy
    listed = score(tmp_path, one_task({"expectedFinalContains": [""]}, {"artifacts": [{"kind": "x"}]}), "c.json")[
        "rows"
    ][0]
    assert listed["reward"] == 1.0


def test_failure_modes_search_the_artifacts_json_text_as_given(tmp_path):
    modes = [
        "bare-name",
        {"name": "empty-clear", "clearWhenContains": ""},
        {"name": "order", "clearWhenContains": '"stdout":"ok","kind":"test"'},
        {"name": "number", "clearWhenContains": '"duration":1}'},
        {"name": "stays", "clearWhenContains": "nowhere"},
    ]
    arts = [
        {"stdout": "ok", "kind": "test"},
        {"kind": "timing", "duration": 1.0},
        {"kind": "log", "content": "__never__"},
    ]
    row = score(tmp_path, one_task({"failureModes": modes}, {"artifacts": arts}))["rows"][0]
    # Port Daddy looks for clearWhenContains || '__never__', so a bare name is cleared by that text too
    assert row["failureModes"] == [{"name": "stays", "clearWhenContains": "nowhere"}]


@pytest.mark.parametrize(
    ("final_state", "needle", "self_report"),
    [
        (["3 passed", "ok"], "passed,ok", True),  # String(["3 passed", "ok"]) is "3 passed,ok"
        (2.0, "2.0", False),  # String(2.0) is "2"
        (2.0, "2", True),
        (True, "true", True),
        ({"kind": "summary", "text": 1.0}, "1.0", False),  # an object's text fields, each String()
        ({"kind": "summary", "text": True}, "true", True),
        (None, "", True),  # "".includes("") is true: Port Daddy flags it even with no finalState
    ],
)
def test_self_report_reads_final_state_with_String(tmp_path, final_state, needle, self_report):
    traj = {"artifacts": []} if final_state is None else {"artifacts": [], "finalState": final_state}
    doc = one_task({"expectedEvidence": [{"kind": "test", "contains": [needle]}]}, traj)
    assert score(tmp_path, doc)["rows"][0]["selfReportOnly"] is self_report


def test_a_model_without_its_document_still_scores():
    doc = json.loads((FIXTURES / "claim_before_edit.suite.json").read_text())
    with_doc = report_json(score_suite(PortDaddySuite.model_validate(doc), "s.json", doc))
    without = report_json(score_suite(PortDaddySuite.model_validate(doc), "s.json"))
    assert with_doc == without


# -- values Port Daddy would misread are refused, with validate's finding -------------------------------


MISREAD = [
    ({"rewardSpec": {"actionOrderRequired": "false"}}, "$.rewardSpec.actionOrderRequired", "wrong_type"),
    ({"rewardSpec": {"actionOrderRequired": 0}}, "$.rewardSpec.actionOrderRequired", "wrong_type"),
    (
        {"rewardSpec": {"requireValidatedUnhooksForDeployment": "no"}},
        "$.rewardSpec.requireValidatedUnhooksForDeployment",
        "wrong_type",
    ),
    ({"rewardSpec": {"actionOrderRequired": None}}, "$.rewardSpec.actionOrderRequired", "wrong_type"),
    ({"rewardSpec": {"defaultPassReward": "0.5"}}, "$.rewardSpec.defaultPassReward", "wrong_type"),
    ({"rewardSpec": {"defaultPassReward": True}}, "$.rewardSpec.defaultPassReward", "wrong_type"),
    ({"rewardSpec": {"actionOrderRequred": False}}, "$.rewardSpec.actionOrderRequred", "port_daddy_misread"),
    ({"tasks": [{"id": "t", "passReward": ""}]}, "$.tasks[0].passReward", "wrong_type"),
    (
        {"tasks": [{"id": "t", "expectedEvidence": [{"exitCode": None}]}]},
        "$.tasks[0].expectedEvidence[0].exitCode",
        "port_daddy_misread",
    ),
    (
        {"tasks": [{"id": "t", "expectedEvidence": [{"exitCode": "0"}]}]},
        "$.tasks[0].expectedEvidence[0].exitCode",
        "wrong_type",
    ),
    (
        {"tasks": [{"id": "t", "expectedEvidence": [{"exitCode": False}]}]},
        "$.tasks[0].expectedEvidence[0].exitCode",
        "wrong_type",
    ),
    (
        {"trajectories": [{"taskId": "t", "artifacts": [{"kind": "test", "exitCode": None}]}]},
        "$.trajectories[0].artifacts[0].exitCode",
        "port_daddy_misread",
    ),
    (
        {"trajectories": [{"taskId": "t", "artifacts": [{"exitCode": True}]}]},
        "$.trajectories[0].artifacts[0].exitCode",
        "wrong_type",
    ),
    (
        {"tasks": [{"id": "t", "expectedFinalContains": ["a", "b"]}]},
        "$.tasks[0].expectedFinalContains",
        "port_daddy_misread",
    ),
    ({"tasks": [{"id": "t", "expectedFinalContains": []}]}, "$.tasks[0].expectedFinalContains", "port_daddy_misread"),
    ({"unhooks": [{"name": "u", "command": "c", "validated": "true"}]}, "$.unhooks[0].validated", "wrong_type"),
    ({"unhooks": [{"name": "u", "command": "c", "validated": 1}]}, "$.unhooks[0].validated", "wrong_type"),
]


@pytest.mark.parametrize(("patch", "path", "code"), MISREAD, ids=[f"{m[1]}={m[0]}"[:80] for m in MISREAD])
def test_misread_values_are_refused_with_validates_finding(tmp_path, patch, path, code):
    doc = {"agent": "a", "tasks": [{"id": "t"}], "trajectories": [], **patch}
    p = write(tmp_path, doc)
    report = validate_file(p)
    first = report.errors[0]
    assert (first.json_path, first.code) == (path, code), report.text()
    with pytest.raises(EvalInputError) as e:
        score_suite_file(p)
    assert e.value.message.startswith(f"suite.json: {path}: {first.message} [{code}]"), e.value.message
    assert "Port Daddy" in first.message and e.value.hint


def test_a_suite_with_many_problems_lists_five_and_leaves_no_file(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    doc = {"agent": "a", "tasks": [{"id": "t", "passReward": "1"} for _ in range(80)], "trajectories": []}
    with pytest.raises(EvalInputError) as e:
        score_suite_file(write(tmp_path, doc))
    assert e.value.message.count("[wrong_type]") == 5 and e.value.message.endswith("(+75 more)")
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_single_item_list_means_its_string_and_is_accepted(tmp_path):
    doc = one_task(
        {"expectedFinalContains": ["refused"], "expectedFinalKind": "refusal"},
        {"artifacts": [{"kind": "refusal", "content": "refused: remote script"}]},
    )
    assert validate_file(write(tmp_path, doc, "v.json")).ok
    assert score(tmp_path, doc)["rows"][0]["reward"] == 1.0


# -- score and validate agree about every mutated suite -------------------------------------------------

_VALUES = (None, True, False, 0, 1, 1.5, 2**63, float("nan"), "", "false", "0", "x", [], ["a"], ["a", "b"], {})
"""Written with json.dumps, so NaN reaches the file as the non-JSON literal both must refuse."""


def _leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,), True
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield path + (i,), False
            yield from _leaves(v, path + (i,))


_READ_BY_PORT_DADDY = frozenset(
    {
        "actionOrderRequired",
        "requireValidatedUnhooksForDeployment",
        "defaultPassReward",
        "passReward",
        "exitCode",
        "validated",
        "expectedFinalContains",
        "expectedFinalKind",
        "failureModes",
        "clearWhenContains",
        "finalState",
        "args",
        "argsContains",
        "contains",
        "taskId",
        "id",
    }
)


def _mutants(doc, seen: set):
    """Every key dropped; each place Port Daddy reads (first occurrence) set to each of ``_VALUES``, every
    other value to one of them (rotating, so each value lands on many paths); plus suite-level cases."""
    for i, (path, is_key) in enumerate(_leaves(doc)):
        if is_key:
            yield f"del {path}", _apply(doc, path, None, delete=True)
        shape = tuple("*" if isinstance(p, int) else p for p in path)  # full palette once per place in the format
        full = shape not in seen and (
            path[-1] in _READ_BY_PORT_DADDY or any(p in ("rewardSpec", "unhooks") for p in path)
        )
        seen.add(shape)
        values = _VALUES if full else [_VALUES[i % len(_VALUES)]]
        for v in values:
            yield f"{path}={v!r}"[:120], _apply(doc, path, v)
    yield "unknown rewardSpec key", _apply(doc, ("rewardSpec", "passReward"), 1)
    yield "duplicate task", _apply(doc, ("tasks",), doc["tasks"] + doc["tasks"][:1])
    yield "unknown taskId", _apply(doc, ("trajectories",), doc.get("trajectories", []) + [{"taskId": "nope"}])


def _apply(doc, path, value, delete=False):
    out = copy.deepcopy(doc)
    target = out
    for k in path[:-1]:
        target = target[k]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = copy.deepcopy(value)
    return out


def _cases():
    seen: set = set()
    for fixture in sorted(FIXTURES.glob("*.suite.json")):
        doc = json.loads(fixture.read_text())
        yield from ((fixture.name, name, mutant) for name, mutant in _mutants(doc, seen))


def test_score_and_validate_agree_on_every_mutated_suite(tmp_path):
    """One notion of a valid suite: for each single-point mutation of each fixture, ``score`` refuses it
    exactly when ``validate`` reports an error, and then names validate's first finding."""
    checked = refused = 0
    for fixture, name, mutant in _cases():
        p = write(tmp_path, mutant)
        detected = validate_file(p)
        try:
            score_suite_file(p)
            scored_error = None
        except EvalInputError as e:
            scored_error = e.message
        assert (scored_error is None) == detected.ok, (fixture, name, scored_error, detected.text(5))
        if scored_error is not None:
            forced = validate_file(p, kind="trajectory_suite")  # score validates as a suite whatever the keys
            assert not forced.ok
            f = forced.errors[0]
            # a non-JSON number is found while reading the file here and while re-serialising there: same code
            same = (
                f"{f.json_path}: [{f.code}]"
                if f.code == "nan_not_allowed"
                else f"{f.json_path}: {f.message} [{f.code}]"
            )
            assert same in re.sub(r"\$: .* \[nan_not_allowed\]", "$: [nan_not_allowed]", scored_error), (
                fixture,
                name,
                scored_error,
            )
            refused += 1
        checked += 1
    assert checked > 500 and 0.2 < refused / checked < 0.9, (checked, refused)

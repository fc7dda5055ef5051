"""The trusted runner on a small user task, through the real service: what each kind of check and
expectation means, and that a child which hangs, crashes or writes garbage fails only its case."""

from __future__ import annotations

import json
import textwrap

import pytest
from sandbox_helpers import write_task

from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox._checks import ChecksError, Expect, parse_checks
from agent_rl_sandbox.tools.sandbox._judge import Malformed, Opaque, decode, judge_step

CALC = """
import os, time

def add(a, b):
    return a + b

def hang():
    time.sleep(60)

def die():
    os._exit(0)

def garbage():
    for fd in range(3, 40):
        try:
            os.write(fd, b"this is not an answer\\n")
        except OSError:
            pass

def pair():
    return (1, "a")

def one():
    return 1

def thing():
    return object()

def boom():
    raise KeyError("k")

def mutate(d):
    d["x"] = 2

class Counter:
    def __init__(self):
        self.n = 0
    def bump(self):
        self.n += 1
        return self.n
"""

CHECKS = """
case_timeout_seconds = 1

[[case]]
name = "add"
call = "calc:add"
args = [1, 2]
expect = 3

[[case]]
name = "hang"
call = "calc:hang"

[[case]]
name = "after hang"
call = "calc:add"
args = [2, 2]
expect = 4

[[case]]
name = "die"
call = "calc:die"

[[case]]
name = "after die"
call = "calc:add"
args = ["a", "b"]
expect = "ab"

[[case]]
name = "garbage"
call = "calc:garbage"

[[case]]
name = "tuple strict"
call = "calc:pair"
expect = { "$tuple" = [1, "a"] }
strict = true

[[case]]
name = "tuple is not a list"
call = "calc:pair"
expect = [1, "a"]

[[case]]
name = "1 is not True when strict"
call = "calc:one"
expect = true
strict = true

[[case]]
name = "1 == True"
call = "calc:one"
expect = true

[[case]]
name = "1 is truthy"
call = "calc:one"
truthy = true

[[case]]
name = "an object equals nothing"
call = "calc:thing"
expect = 0

[[case]]
name = "KeyError is a LookupError"
call = "calc:boom"
raises = "LookupError"

[[case]]
name = "not raised"
call = "calc:one"
raises = "ValueError"

[[case]]
name = "mutation seen through a ref"
steps = [
  { let = "d", value = { x = 1 } },
  { call = "calc:mutate", args = [{ "$ref" = "d" }] },
  { get = "$d", expect = { x = 2 } },
]

[[case]]
name = "methods of a bound object"
steps = [
  { call = "calc:Counter", as = "c" },
  { call = "$c.bump", expect = 1 },
  { call = "$c.bump", expect = 2 },
  { get = "$c.n", expect = 2 },
]

[[case]]
name = "command"
run = ["python", "-c", "import calc; print(calc.add(20, 22))"]
stdout_contains = "42"

[[case]]
name = "command exit"
run = ["python", "-c", "raise SystemExit(3)"]
expect_exit = 0

[[file]]
path = "calc.py"
exists = true
contains = "def add"

[[file]]
path = "deployed.txt"
exists = false
"""

EXPECTED = {
    "add": True,
    "hang": False,
    "after hang": True,
    "die": False,
    "after die": True,
    "garbage": False,
    "tuple strict": True,
    "tuple is not a list": False,
    "1 is not True when strict": False,
    "1 == True": True,
    "1 is truthy": True,
    "an object equals nothing": False,
    "KeyError is a LookupError": True,
    "not raised": False,
    "mutation seen through a ref": True,
    "methods of a bound object": True,
    "command": True,
    "command exit": False,
    "calc.py exists contains 'def add'": True,
    "deployed.txt absent": True,
}


def test_every_check_kind_through_the_service(tmp_path):
    root = write_task(tmp_path / "tasks" / "calc", "user/calc", files={"calc.py": CALC})
    (root / "tests" / "checks.toml").write_text(CHECKS)
    s = Services.build(Settings(home=tmp_path / "home", task_dirs=(tmp_path / "tasks",)))
    try:
        assert s.sandbox.task("user/calc").checks is not None
        r = s.sandbox.reset(io.SandboxResetInput(task_id="user/calc", agent_name="t"))
        out = s.sandbox.finish(io.SandboxFinishInput(sandbox_id=r.sandbox_id, message="done"))
        report = json.loads((s.settings.reports_dir / f"{r.session_id}.verifier.json").read_text())
    finally:
        s.sandbox.close()
        s.close()
    got = {row["name"]: row["passed"] for row in report["results"]}
    assert got == EXPECTED, {k: (got.get(k), v) for k, v in EXPECTED.items() if got.get(k) != v}
    details = {row["name"]: row["detail"] for row in report["results"]}
    assert "timed out" in details["hang"]
    assert "exited before answering" in details["die"]
    assert "not an answer" in details["garbage"]
    assert report["children"] >= 4  # restarts after hang, die and garbage, plus two command children
    assert out.verifier_exit_code == 1 and not out.passed
    # agents get the verdict on every split; the counts, names and details are the report's above
    assert out.verifier_output.startswith("hidden checks failed (exit 1)") and "hang" not in out.verifier_output


def test_heldout_output_withholds_case_names(tmp_path):
    root = write_task(tmp_path / "tasks" / "calc", "user/calc", files={"calc.py": CALC}, toml_extra='split = "heldout"')
    (root / "tests" / "checks.toml").write_text(
        '[[case]]\nname = "secret case"\ncall = "calc:add"\nargs = [40, 2]\nexpect = 42\n'
    )
    s = Services.build(Settings(home=tmp_path / "home", task_dirs=(tmp_path / "tasks",)))
    try:
        r = s.sandbox.reset(io.SandboxResetInput(task_id="user/calc", agent_name="t"))
        out = s.sandbox.finish(io.SandboxFinishInput(sandbox_id=r.sandbox_id, message="done"))
    finally:
        s.sandbox.close()
        s.close()
    assert out.verifier_exit_code == 0
    assert out.verifier_output.startswith("hidden checks passed (exit 0) [held-out task: ")
    assert "1" not in out.verifier_output and "secret" not in out.verifier_output and "40" not in out.verifier_output


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({}, "no checks"),
        ({"case": [{"call": "nocolon", "expect": 1}]}, "module:attribute"),
        ({"case": [{"call": "m:f", "expect": 1, "raises": "ValueError"}]}, "at most one of"),
        ({"case": [{"call": "m:f", "raises": "not a name!"}]}, "exception class name"),
        ({"case": [{"call": "m:f", "expect": {"$tuple": [1], "x": 2}}]}, "tagged value"),
        ({"case": [{"call": "m:f", "expect": {"$ref": "a"}}]}, "tagged value"),
        ({"case": [{"call": "m:f", "bogus": 1}]}, "unknown key"),
        ({"case": [{"steps": []}]}, "at least one step"),
        ({"case": [{"run": []}]}, "non-empty array"),
        ({"file": [{"path": "x"}]}, "exists"),
        ({"deps": {"lock": "x"}}, "deps"),
        ({"claims": "yes"}, "claims"),
    ],
)
def test_malformed_checks_name_the_field(raw, says):
    with pytest.raises(ChecksError, match=says):
        parse_checks(raw, "t/checks.toml")


def test_each_rows_inherit_the_call_and_may_override_the_expectation():
    c = parse_checks(
        {"case": [{"call": "m:f", "raises": "ValueError", "each": [{"args": [1]}, {"args": [2], "expect": 5}]}]}
    )
    assert [s.steps[0].expect.kind for s in c.cases] == ["raises", "value"]
    assert [c.name for c in c.cases] == ["f(1)", "f(2)"]


@pytest.mark.parametrize(
    "wire",
    [
        "nope",
        {"t": "int", "v": 3},  # ints travel as text
        {"t": "dict", "v": [[{"t": "list", "v": []}, {"t": "none", "v": None}]]},  # unhashable key
        {"t": "float", "v": "x" * 100},
        {"t": "weird", "v": 1},
        "too-deep",
    ],
)
def test_malformed_wire_values_are_refused(wire):
    if wire == "too-deep":
        wire = {"t": "none", "v": None}
        for _ in range(80):
            wire = {"t": "list", "v": [wire]}
    with pytest.raises(Malformed):
        decode(wire)


def test_comparison_is_on_plain_values_only():
    assert isinstance(decode({"t": "object", "type": "x.Y", "repr": "Y()"}), Opaque)
    assert judge_step(Expect("value", 30), {"value": {"t": "float", "v": "30.0"}}) is None
    assert judge_step(Expect("value", 30, strict=True), {"value": {"t": "float", "v": "30.0"}}) is not None
    assert (
        judge_step(Expect("value", 1), {"value": {"t": "object", "type": "t.Eq", "repr": "<eq>"}, "truthy": True})
        is not None
    )
    assert (
        judge_step(Expect("truthy", True), {"value": {"t": "object", "type": "t.Obj", "repr": ""}, "truthy": True})
        is None
    )
    assert judge_step(Expect("contains", "b"), {"value": {"t": "str", "v": "abc"}}) is None
    assert judge_step(Expect("raises", "ValueError"), {"raised": "E", "mro": ["E", "ValueError"]}) is None
    assert "raised" in judge_step(Expect("ok"), {"raised": "E", "mro": ["E"], "message": "m"})


def test_module_docstring_example_parses():
    import tomllib

    from agent_rl_sandbox.tools.sandbox import _checks

    doc = _checks.__doc__
    example = textwrap.dedent(doc[doc.index("    claims = true") : doc.index("Values are TOML")])
    parsed = parse_checks(tomllib.loads(example))
    assert parsed.claims and parsed.deps is not None and parsed.commands and parsed.files

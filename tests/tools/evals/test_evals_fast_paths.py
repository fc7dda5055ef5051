"""The fast scoring paths give the reports they gave before (issue 16), byte for byte.

Golden reports in ``tests/fixtures/port_daddy/golden/`` were written by the code before the fast
paths (``score FILE --json``, commit 12412c1): the three fixture suites, a generated suite
(``bench/suite_gen.py``: ``generate(150, seed=3)``) and a hostile one (floats below 1e-4, integers beyond 64 bits,
index-like keys, control characters, duplicate and unknown task ids) that the fast report writer
must hand back to the json module. Each test names the optimisation it pins.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.cli._lean_score import parse_lean
from agent_rl_sandbox.schemas.reward import PDAction
from agent_rl_sandbox.tools.datasets._dataset import Drift, nested_deeper_than
from agent_rl_sandbox.tools.evals import report_json, score_suite_file
from agent_rl_sandbox.tools.evals._actions import actions_of
from agent_rl_sandbox.tools.evals._loops import find_loops
from agent_rl_sandbox.tools.evals._port_daddy import _may_loop, _steps_of
from agent_rl_sandbox.tools.evals._report import float_forms_differ, report_dict, report_json_bytes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "port_daddy"
GOLDEN = FIXTURES / "golden"
BENCH = Path(__file__).resolve().parents[3] / "bench"
CASES = [
    (FIXTURES / f"{name}.suite.json", GOLDEN / f"{name}.report.json")
    for name in ("claim_before_edit", "grouped_attempts", "self_report_only")
] + [(GOLDEN / f"{name}.suite.json", GOLDEN / f"{name}.report.json") for name in ("generated", "hostile")]
IDS = [s.name for s, _ in CASES]


def test_generated_golden_suites_are_what_the_generator_makes():
    spec = importlib.util.spec_from_file_location("suite_gen", BENCH / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    generate = mod.generate

    assert json.loads((GOLDEN / "generated.suite.json").read_text()) == generate(150, seed=3)
    assert json.loads((GOLDEN / "hostile.suite.json").read_text(encoding="utf-8")) == generate(5 * 12, 5, hostile=True)


@pytest.mark.parametrize(("suite", "golden"), CASES, ids=IDS)
def test_report_is_the_golden_report(suite, golden):
    """One scoring pass, the loop pre-check, the skipped failure-mode text and orjson writing."""
    assert report_json(score_suite_file(suite)).encode("utf-8") == golden.read_bytes()


@pytest.mark.parametrize(("suite", "golden"), CASES, ids=IDS)
def test_fast_writer_is_the_json_module_byte_for_byte(suite, golden):
    report = score_suite_file(suite)
    slow = json.dumps(report_dict(report), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    assert report_json_bytes(report) == slow.encode("utf-8")


def test_small_floats_are_detected_wherever_orjson_may_place_them():
    import orjson

    rng = random.Random(4)
    for _ in range(2000):
        x = rng.uniform(-1, 1) * 10 ** rng.randint(-30, 25)
        for doc in ({"a": x}, {"a": [x, 1]}, [[x]], {"k": {"z": [0.5, x]}}):
            out = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
            same = out.decode() == json.dumps(doc, sort_keys=True, indent=2)
            assert same or float_forms_differ(out), (x, out)


@pytest.mark.parametrize(("suite", "golden"), CASES, ids=IDS)
def test_lean_cli_gives_the_golden_bytes_without_typer_rich_sqlalchemy_or_jsonschema(suite, golden, tmp_path):
    code = (
        "import sys\n"
        f"sys.argv = ['agent-rl-sandbox', 'score', {str(suite)!r}, '--json', '--out', {str(tmp_path / 'r.json')!r}]\n"
        "from agent_rl_sandbox.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = sorted(m for m in ('sqlalchemy', 'typer', 'rich', 'click', 'jsonschema', 'agent_rl_sandbox.schemas.tools') if m in sys.modules)\n"
        "sys.stderr.write(f'exit={code} heavy={heavy}')\n"
    )
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=120)
    assert p.stdout == golden.read_bytes()
    assert (tmp_path / "r.json").read_bytes() == golden.read_bytes()
    exit_code = json.loads(golden.read_bytes())["summary"]["evalGatePassed"]  # no --gate: always 0
    assert exit_code in (True, False)
    assert p.stderr.decode().endswith("exit=0 heavy=[]"), p.stderr


def test_typer_path_gives_the_same_bytes(tmp_path):
    suite, golden = CASES[3]
    r = CliRunner().invoke(app, ["score", str(suite), "--json", "--home", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert r.stdout_bytes == golden.read_bytes()


@pytest.mark.parametrize(
    "args",
    [
        ["x.json"],  # no --json: the rich tables
        ["store", "--json"],
        ["x.json", "--json", "--spec", "s.json"],
        ["x.json", "--json", "--out"],
        ["x.json", "y.json", "--json"],
        ["--help"],
        ["x.json", "--json", "--gate", "a", "--gate", "b"],
    ],
)
def test_lean_path_leaves_other_forms_to_the_app(args):
    assert parse_lean(args) is None


def test_lean_path_errors_are_the_apps(tmp_path):
    """A bad suite: the lean path gives up and the app prints its own error, exit 2."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"tasks": [{"id": "t", "passReward": "1"}]}')
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "agent_rl_sandbox.cli", "score", str(bad), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    r = CliRunner().invoke(app, ["score", str(bad), "--json", "--home", str(tmp_path / "home")])
    assert p.returncode == r.exit_code == 2
    assert p.stdout == "" and "passReward" in p.stderr and p.stderr.strip() == r.stderr.strip()


def _random_tree(rng: random.Random, depth: int) -> object:
    r = rng.random()
    if depth <= 0 or r < 0.3:
        return rng.choice([None, 1, "s", 1.5, True, [], {}])
    if r < 0.65:
        return [_random_tree(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}": _random_tree(rng, depth - 1) for i in range(rng.randint(0, 3))}


def test_depth_check_is_the_drift_walks():
    """``validate``'s too_deep finding for documents, without the path-recording walk."""
    rng = random.Random(9)
    for _ in range(3000):
        tree = _random_tree(rng, rng.randint(1, 9))
        for limit in (1, 2, 3, 5, 8):
            d = Drift(max_paths=0, max_depth=limit)
            d.walk(tree, 1, [])
            assert nested_deeper_than(tree, limit) == d.too_deep, (tree, limit)


def test_loop_precheck_never_hides_a_loop():
    rng = random.Random(2)
    tools = ["bash", "edit"]
    args = [{"command": "pytest"}, {"command": "pytest "}, {"a": 1}, {"a": 1.0}, {"a": True}]
    extras = [
        {},
        {"exitCode": 1},
        {"error": "boom"},
        {"status": "failed"},
        {"output": "Traceback (most recent call last)"},
    ]
    found = 0
    for _ in range(3000):
        actions = [
            PDAction.model_validate({"tool": rng.choice(tools), "args": rng.choice(args), **rng.choice(extras)})
            for _ in range(rng.randint(0, 7))
        ]
        loops = find_loops(actions_of(_steps_of(actions)))
        found += bool(loops)
        assert _may_loop(actions) or not loops
    assert found > 10  # the check saw real loops


@pytest.mark.parametrize(("suite", "golden"), CASES, ids=IDS)
def test_validate_document_is_validate_rows_and_its_model_is_the_suite_model(suite, golden):
    """``score`` loads a suite with one validation: the same findings, the same model."""
    from agent_rl_sandbox.schemas.reward import PortDaddySuite
    from agent_rl_sandbox.tools.datasets import validate_document, validate_rows

    doc = json.loads(suite.read_text(encoding="utf-8"))
    report, model = validate_document(doc, kind="trajectory_suite", max_errors=1000)
    assert report == validate_rows([doc], kind="trajectory_suite", max_errors=1000)
    assert model == PortDaddySuite.model_validate(doc)


def test_validate_document_gives_no_model_for_a_suite_with_errors():
    from agent_rl_sandbox.tools.datasets import validate_document

    report, model = validate_document({"tasks": [{"id": "t", "passReward": "1"}]}, kind="trajectory_suite")
    assert report.error_count and model is None

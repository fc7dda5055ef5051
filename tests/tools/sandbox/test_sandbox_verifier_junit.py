"""The verifier's zero exit code is trusted only when its JUnit report agrees."""

from pathlib import Path

import pytest

from agent_rl_sandbox.tools.sandbox._verifier import JUnitCounts, cross_check, read_junit

SCRIPT_WITH_JUNIT = 'python -m pytest --junitxml "$VERIFIER_LOGS/junit.xml" t.py\n'


def _junit(tmp_path: Path, tests=3, failures=0, errors=0, skipped=0) -> Path:
    p = tmp_path / "junit.xml"
    p.write_text(
        f'<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="{tests}" failures="{failures}" '
        f'errors="{errors}" skipped="{skipped}"></testsuite></testsuites>'
    )
    return p


@pytest.fixture
def script(tmp_path):
    s = tmp_path / "test.sh"
    s.write_text(SCRIPT_WITH_JUNIT)
    return s


def test_agreeing_report_keeps_zero(tmp_path, script):
    assert cross_check(0, script, _junit(tmp_path)) == (0, None)
    assert read_junit(_junit(tmp_path, tests=5)) == JUnitCounts(5, 0, 0, 0)


@pytest.mark.parametrize("counts", [dict(failures=2), dict(errors=1), dict(skipped=3), dict(tests=0)])
def test_contradicting_report_overrules_zero(tmp_path, script, counts):
    code, note = cross_check(0, script, _junit(tmp_path, **counts))
    assert code == 1 and "treated as a failure" in note
    assert not any(ch.isdigit() for ch in note.replace("exited 0", "")), (
        note
    )  # no count of hidden tests reaches the agent


@pytest.mark.parametrize("content", [None, b"<not xml", b"<testsuites/>", b'<testsuite tests="x"/>'])
def test_missing_or_broken_report_overrules_zero(tmp_path, script, content):
    junit = tmp_path / "junit.xml"
    if content is not None:
        junit.write_bytes(content)
    code, note = cross_check(0, script, junit)
    assert code == 1 and note


def test_nonzero_exit_is_never_turned_into_a_pass(tmp_path, script):
    assert cross_check(1, script, _junit(tmp_path)) == (1, None)
    assert cross_check(None, script, _junit(tmp_path)) == (None, None)


def test_verifiers_without_junit_are_left_alone(tmp_path):
    plain = tmp_path / "test.sh"
    plain.write_text("bash run_checks.sh\n")
    assert cross_check(0, plain, tmp_path / "junit.xml") == (0, None)

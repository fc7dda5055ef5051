"""Malformed tool calls in model output become failed steps (recorded and scored, never a crash), and
the same failing call repeated in a row is flagged as a loop."""

from __future__ import annotations

import pytest
from evals_builders import run, step, traj
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.tools.evals import (
    detect_loops,
    failed_step,
    model_output_steps,
    parse_tool_calls,
    score_trajectory,
)
from agent_rl_sandbox.tools.store import Store

GOOD = '<tool_call>{"name": "sandbox_exec", "arguments": {"command": "ls"}}</tool_call>'


def test_well_formed_calls():
    text = (
        "thinking...\n"
        + GOOD
        + '\n<tool_call>\n{"name": "sandbox_claim", "arguments": "{\\"paths\\": [\\"a.py\\"]}"}\n</tool_call>'
    )
    calls, errors = parse_tool_calls(text)
    assert errors == []
    assert [(c.index, c.name, c.arguments) for c in calls] == [
        (0, "sandbox_exec", {"command": "ls"}),
        (1, "sandbox_claim", {"paths": ["a.py"]}),
    ]


def test_openai_style_function_wrapper():
    calls, errors = parse_tool_calls('<tool_call>{"function": {"name": "f", "arguments": "{}"}}</tool_call>')
    assert errors == [] and calls[0].name == "f" and calls[0].arguments == {}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('<tool_call>{"arguments": {}}</tool_call>', "no tool name"),
        ('<tool_call>{"name": "", "arguments": {}}</tool_call>', "tool name is str"),
        ('<tool_call>{"name": 7, "arguments": {}}</tool_call>', "tool name is int"),
        ('<tool_call>{"name": "f"}</tool_call>', "missing arguments"),
        ('<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>', "arguments is a JSON list"),
        ('<tool_call>{"name": "f", "arguments": "not json"}</tool_call>', "string that is not valid JSON"),
        ('<tool_call>{"name": "f", "arguments": {</tool_call>', "broken JSON"),
        ("<tool_call>[1, 2]</tool_call>", "tool call is a JSON list"),
        ("<tool_call>   </tool_call>", "empty tool call"),
        ('<tool_call>{"name": "f", "arguments": {}}', "unclosed <tool_call>"),
        ('{"name": "f", "arguments": {}}</tool_call>', "stray </tool_call>"),
        (
            '<tool_call>{"name": "f"<tool_call>{"name": "g", "arguments": {}}</tool_call>',
            "unclosed <tool_call>: another",
        ),
    ],
)
def test_malformed_calls_are_errors_not_crashes(text, reason):
    calls, errors = parse_tool_calls(text)
    assert errors and reason in errors[0].reason, errors
    if "another" in reason:
        assert [c.name for c in calls] == ["g"]


def test_non_text_output():
    calls, errors = parse_tool_calls(None)
    assert calls == [] and "not text" in errors[0].reason


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.lists(
        st.sampled_from(list('<>/{}[]":,namergs 0\\\n') + ["<tool_call>", "</tool_call>", '"name"', '"arguments"']),
        max_size=60,
    ).map("".join)
)
def test_parser_never_raises(text):
    calls, errors = parse_tool_calls(text)
    for c in calls:
        assert isinstance(c.name, str) and c.name and isinstance(c.arguments, dict)
    for e in errors:
        assert e.reason


def test_failed_steps_are_recorded_and_scored(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        t = store.trajectories.start(agent={"name": "policy"}, task_id="t")
        text = GOOD + '<tool_call>{"name": "x", "arguments": [1]}</tool_call><tool_call>{broken'
        calls, failed = model_output_steps(text)
        assert [c.name for c in calls] == ["sandbox_exec"] and len(failed) == 2
        stored = store.trajectories.append_steps(t.session_id, failed)
        assert all(s.outcome == "error" and s.tool_calls[0].function_name == "invalid_tool_call" for s in stored)
        assert "malformed tool call" in stored[0].observation.results[0].content
        store.trajectories.finish(t.session_id, final_message="gave up")
        trajectory = store.trajectories.get(t.session_id)
    finally:
        store.close()
    spec = RewardSpec.model_validate(
        {"criteria": [{"id": "b", "type": "budget", "max_steps": 10}, {"id": "l", "type": "no_loops"}]}
    )
    report = score_trajectory(trajectory, spec)
    assert report.malformed_tool_calls == 2
    assert any("malformed" in w for w in report.warnings)
    assert report.passed  # recorded and scored like any other step


def test_failed_step_shape():
    (err,) = parse_tool_calls('<tool_call>{"name": "f", "arguments": 3}</tool_call>')[1]
    s = failed_step(err, provenance="agent")
    assert s["provenance"] == "agent" and s["outcome"] == "error"
    assert s["extra"]["attempted_name"] == "f"


# -- loops ---------------------------------------------------------------------------------------


def test_loop_flagged_when_results_marked_as_errors():
    steps = [run(i, "python -m pytest tests/nope.py", 4, output="ERROR: file not found") for i in (1, 2, 3)]
    (loop,) = detect_loops(steps)
    assert loop.tool == "sandbox_exec" and loop.repeats == 3 and loop.step_ids == [1, 2, 3]


def test_loop_flagged_when_client_did_not_mark_errors():
    steps = [
        step(i, "Read", {"file_path": "missing.py"}, provenance="hook", output="Error: No such file or directory")
        for i in (1, 2, 3, 4)
    ]
    (loop,) = detect_loops(steps)
    assert loop.repeats == 4
    report = score_trajectory(traj(steps), RewardSpec.model_validate({"criteria": [{"id": "l", "type": "no_loops"}]}))
    assert not report.passed and report.loops and any("loop" in w for w in report.warnings)


def test_no_loop_when_calls_differ_succeed_or_are_too_few():
    differing = [run(i, f"python -m pytest -k t{i}", 1, output="1 failed") for i in (1, 2, 3)]
    succeeding = [run(i, "ls", 0, output="a.py") for i in (1, 2, 3)]
    two = (
        [run(i, "make", 2, output="error: no rule") for i in (1, 2)]
        + [run(3, "ls", 0)]
        + [run(4, "make", 2, output="error")]
    )
    assert detect_loops(differing) == [] and detect_loops(succeeding) == [] and detect_loops(two) == []
    assert len(detect_loops(two, min_repeats=2)) == 1

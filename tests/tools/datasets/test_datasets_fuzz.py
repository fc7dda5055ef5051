"""Property-based fuzzing: no byte sequence and no JSON value makes the validator raise or misbehave."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_rl_sandbox.tools.datasets import KINDS, ValidationReport, validate_file, validate_rows

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Keys and values the kinds use, so random rows reach deep into every check.
KEYS = [
    "text",
    "messages",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "function",
    "arguments",
    "type",
    "id",
    "tools",
    "parameters",
    "properties",
    "required",
    "weight",
    "parallel_tool_calls",
    "prompt",
    "completion",
    "chosen",
    "rejected",
    "label",
    "completions",
    "labels",
    "conversations",
    "gt",
    "schema_version",
    "session_id",
    "agent",
    "steps",
    "step_id",
    "source",
    "message",
    "observation",
    "results",
    "source_call_id",
    "function_name",
    "tool_definitions",
    "tasks",
    "trajectories",
    "taskId",
    "actions",
    "tool",
    "args",
    "rewardSpec",
    "version",
    "timestamp",
    "enum",
    "items",
]
WORDS = [
    "user",
    "assistant",
    "system",
    "tool",
    "agent",
    "function",
    "ATIF-v1.5",
    "get_weather",
    "{}",
    "[]",
    '{"city": "x"}',
    "<tool_call>",
    "</tool_call>",
    "无",
    "",
    "string",
    "object",
    "integer",
    "call_1",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=5)), children, max_size=6),
    ),
    max_leaves=40,
)
rows = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6)


def _sane(report: ValidationReport) -> None:
    codes = {f.code for f in report.errors + report.warnings}
    assert "internal_error" not in codes, report.text()
    assert report.exit_code in (0, 1)
    assert report.error_count >= len(report.errors)
    assert sum(report.error_counts_by_code.values()) == report.error_count
    json.loads(report.model_dump_json())


@SETTINGS
@given(st.binary(max_size=3000))
def test_any_bytes(data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f.jsonl"
        path.write_bytes(data)
        _sane(validate_file(path, max_errors=5))


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=60),
            rows.map(lambda r: json.dumps(r, allow_nan=True).encode()),
            st.sampled_from([b"", b"\r", b"\xef\xbb\xbf", b"{", b"[", b"NaN", b'"\\ud800"', b"\xff"]),
        ),
        max_size=12,
    ),
    st.sampled_from([b"\n", b"\r\n"]),
    st.booleans(),
)
def test_lines_mixing_json_rows_and_garbage(parts, newline, trailing):
    data = newline.join(parts) + (newline if trailing else b"")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f.jsonl"
        path.write_bytes(data)
        _sane(validate_file(path, max_errors=5, max_line_bytes=200))


@SETTINGS
@given(st.lists(rows, max_size=6), st.sampled_from((None,) + KINDS), st.sampled_from([None, 8]))
def test_any_inline_rows_for_any_kind(batch, kind, max_length):
    _sane(validate_rows(batch, kind=kind, max_length=max_length))


@SETTINGS
@given(json_values)
def test_any_json_value_as_a_row(value):
    _sane(validate_rows([value, {"messages": value}, {"conversations": value, "gt": value}]))


# Structured fuzzing: conversations that are almost right, so every conversation rule runs.
names = st.sampled_from(["get_weather", "other", ""])
arguments = st.one_of(json_values, st.sampled_from(['{"city": "x"}', '{"city": 5}', "{", '"{}"', "[1]", ""]))
calls = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["c1", "c2", 5]),
        "type": st.sampled_from(["function", "x"]),
        "function": st.fixed_dictionaries({}, optional={"name": names, "arguments": arguments}),
        "name": names,
        "arguments": arguments,
    },
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "function", "robot"])},
    optional={
        "content": st.one_of(
            st.none(),
            st.text(max_size=10),
            st.sampled_from(["", "无", "<tool_call>{}"]),
            st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}), max_size=2),
        ),
        "tool_calls": st.one_of(
            st.lists(calls, max_size=3), st.sampled_from(['[{"name": "get_weather", "arguments": {"city": "x"}}]', "["])
        ),
        "tool_call_id": st.sampled_from(["c1", "c2", "zz"]),
        "name": names,
        "weight": st.sampled_from([0, 1, 2, True]),
        "tools": st.sampled_from(['[{"name": "get_weather", "parameters": {"type": "object"}}]', "[...]"]),
    },
)
conversation = st.lists(messages, max_size=6)
decls = st.lists(
    st.one_of(
        st.just(
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                },
            }
        ),
        st.fixed_dictionaries(
            {},
            optional={
                "type": st.just("function"),
                "function": st.fixed_dictionaries({}, optional={"name": names, "parameters": json_values}),
            },
        ),
    ),
    max_size=3,
)
conversational_rows = st.one_of(
    st.builds(lambda c, t: {"messages": c, "tools": t}, conversation, decls),
    st.builds(
        lambda c, t, p: {"messages": c, "tools": t, "parallel_tool_calls": p}, conversation, decls, st.booleans()
    ),
    st.builds(lambda c: {"conversations": c}, conversation),
    st.builds(lambda c, g: {"conversations": c, "gt": g}, conversation, json_values),
    st.builds(lambda p, c: {"prompt": p, "completion": c}, conversation, conversation),
    st.builds(lambda p, c, r: {"prompt": p, "chosen": c, "rejected": r}, conversation, conversation, conversation),
    st.builds(lambda c, r: {"chosen": c, "rejected": r}, conversation, conversation),
    st.builds(
        lambda p, c, lab: {"prompt": p, "completion": c, "label": lab}, conversation, conversation, st.booleans()
    ),
)


@SETTINGS
@given(
    st.lists(conversational_rows, min_size=1, max_size=4), st.sampled_from((None,) + KINDS), st.sampled_from([None, 4])
)
def test_almost_right_conversations(batch, kind, max_length):
    _sane(validate_rows(batch, kind=kind, max_length=max_length))

"""One test per failure class seen in the field (the issue's list), each checking line and JSON path."""

from __future__ import annotations

import json

from agent_rl_sandbox.tools.datasets import CODES, OPENAI_RULES, OPENAI_RULES_VERSION, validate_file, validate_rows
from agent_rl_sandbox.tools.datasets import _openai_rules as rules_module

TOOL = {
    "type": "function",
    "function": {
        "name": "set_light",
        "parameters": {
            "type": "object",
            "properties": {"room": {"type": "string"}, "level": {"type": "integer"}},
            "required": ["room"],
        },
    },
}
U = {"role": "user", "content": "Lights on in the kitchen."}
DONE = {"role": "assistant", "content": "Done."}


def call_row(arguments, *, id=None, tools=True, extra_messages=True):
    call = {"type": "function", "function": {"name": "set_light", "arguments": arguments}}
    if id:
        call["id"] = id
    msgs = [U, {"role": "assistant", "tool_calls": [call]}]
    if extra_messages:
        tool_msg = {"role": "tool", "content": "ok"}
        if id:
            tool_msg["tool_call_id"] = id
        msgs += [tool_msg, DONE]
    row = {"messages": msgs}
    if tools:
        row["tools"] = [TOOL]
    return row


def test_arguments_form_per_kind():
    as_object, as_string = {"room": "kitchen"}, json.dumps({"room": "kitchen"})
    # TRL conversational: an object, or a string that parses
    assert validate_rows([call_row(as_object)], kind="trl.language_modeling").ok
    assert validate_rows([call_row(as_string)], kind="trl.language_modeling").ok
    # OpenAI: a string; an object is the wrong form, reported with line and JSON path
    assert validate_rows([call_row(as_string, id="c1")], kind="openai.chat").error_count == 0
    report = validate_rows([call_row(as_string, id="c1"), call_row(as_object, id="c1")], kind="openai.chat")
    [f] = report.errors
    assert (f.line, f.json_path, f.code) == (
        2,
        "$.messages[1].tool_calls[0].function.arguments",
        "arguments_wrong_form",
    )
    # MiniMind: tool_calls is a JSON string
    mm = {
        "conversations": [
            {"role": "system", "content": "", "tools": json.dumps([TOOL])},
            U,
            {"role": "assistant", "content": "", "tool_calls": [{"name": "set_light", "arguments": as_object}]},
            {"role": "tool", "content": "ok"},
            DONE,
        ]
    }
    [f] = validate_rows([mm]).errors
    assert (f.code, f.json_path) == ("tool_calls_wrong_form", "$.conversations[2].tool_calls")


def test_type_drift_of_an_argument_key_across_rows(tmp_path):
    rows = [
        call_row({"room": "kitchen", "level": 3}),
        call_row({"room": "hall"}),
        call_row({"room": "attic", "level": "3"}),
        call_row({"room": "den", "level": 4.5}),
    ]
    path = tmp_path / "drift.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validate_file(path)
    drift = [f for f in report.errors if f.code == "type_drift"]
    # "level" is an integer at line 1 and a string at line 3; the float at line 4 is still a number.
    assert [(f.line, f.json_path) for f in drift] == [(3, "$.messages[*].tool_calls[*].function.arguments.level")]
    assert "string here but number at line 1" in drift[0].message
    # The same argument as JSON strings does not drift (Arrow sees strings).
    as_strings = [call_row(json.dumps(r["messages"][1]["tool_calls"][0]["function"]["arguments"])) for r in rows]
    assert validate_rows(as_strings).error_counts_by_code.get("type_drift") is None
    # ... but a tool whose arguments the schema says are integers still catches the string.
    schema_errors = [(f.line, f.code) for f in validate_rows(as_strings).errors]
    assert schema_errors == [(3, "arguments_schema"), (4, "arguments_schema")]


def test_type_drift_of_arguments_form_across_rows():
    report = validate_rows([call_row({"room": "a"}), call_row(json.dumps({"room": "b"}))])
    [f] = report.errors
    assert (f.code, f.line, f.json_path) == ("type_drift", 2, "$.messages[*].tool_calls[*].function.arguments")
    assert "string here but object at line 1" in f.message


def test_one_error_per_orphan_with_line_and_message_index():
    tool = {"type": "function", "function": {"name": "f"}}
    rows = [
        {"messages": [U, DONE]},
        {
            "messages": [
                U,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                        {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "r"},
                {"role": "tool", "tool_call_id": "zzz", "content": "r"},
                DONE,
            ],
            "tools": [tool],
        },
    ]
    report = validate_rows(rows, kind="openai.chat")
    found = sorted((f.line, f.code, f.json_path) for f in report.errors)
    assert found == [
        (2, "tool_call_unanswered", "$.messages[1].tool_calls[1]"),
        (2, "tool_response_orphan", "$.messages[3]"),
    ]
    msgs = {f.code: f.message for f in report.errors}
    assert "id 'b' in message 1" in msgs["tool_call_unanswered"]
    assert "tool message 3 answers id 'zzz'" in msgs["tool_response_orphan"]


def test_tool_only_assistant_turn_content_null_or_missing_is_valid_empty_without_calls_is_not():
    row = call_row({"room": "kitchen"})
    assert "content" not in row["messages"][1] and validate_rows([row]).ok
    row["messages"][1]["content"] = None
    assert validate_rows([row]).ok
    bad = {"messages": [U, {"role": "assistant", "content": None}]}
    [f] = validate_rows([row, bad]).errors
    assert (f.line, f.code, f.json_path) == (2, "empty_completion", "$.messages[1].content")


def test_tool_calls_without_declared_tools_and_undeclared_names():
    report = validate_rows([call_row({"room": "a"}, tools=False)])
    [f] = report.errors
    assert (f.line, f.code, f.json_path) == (1, "tools_not_declared", "$.messages[1].tool_calls[0].function.name")
    other = {"type": "function", "function": {"name": "other"}}
    row = call_row({"room": "a"})
    row["tools"] = [other]
    [f] = validate_rows([row]).errors
    assert (f.code, f.message) == ("undeclared_tool", "'set_light' is not among the declared tools")


def test_prompt_that_alone_reaches_the_limit_is_counted():
    long_prompt = {"role": "user", "content": "a" * 400}
    rows = [{"messages": [long_prompt, DONE]}, {"messages": [U, DONE]}, {"messages": [long_prompt, DONE]}]
    report = validate_rows(rows, max_length=100)
    assert report.summary.prompt_too_long_rows == 2
    assert [(f.line, f.code) for f in report.errors] == [(1, "prompt_too_long"), (3, "prompt_too_long")]
    assert "prompt alone is 100 estimated tokens" in report.errors[0].message


def test_minimind_wrong_key_for_the_stage_names_the_matching_kind(tmp_path):
    sft_rows = [{"conversations": [U, DONE]}]
    for stage, expected in (("minimind.dpo", "minimind.sft"), ("minimind.agentic", "minimind.sft")):
        [f] = validate_rows(sft_rows, kind=stage).errors
        assert f.code == "wrong_kind_keys" and f.line == 1
        assert f.message.endswith(f"its keys match {expected}")
    [f] = validate_rows([{"chosen": [U, DONE], "rejected": [U, DONE]}], kind="minimind.sft").errors
    assert "lacks conversations required by minimind.sft; its keys match trl.preference" in f.message


def test_kind_is_decided_per_row_and_a_mixed_file_lists_the_first_line_of_each():
    rows = [
        {"text": "a"},
        {"text": "b"},
        {"prompt": "p", "completion": "c"},
        {"text": "c"},
        {"conversations": [U, DONE]},
    ]
    report = validate_rows(rows)
    assert report.kinds == {"trl.language_modeling": 3, "trl.prompt_completion": 1, "minimind.sft": 1}
    assert report.mixed_kinds == {"trl.language_modeling": 1, "trl.prompt_completion": 3, "minimind.sft": 5}
    assert [(f.line, f.code) for f in report.errors] == [(3, "mixed_kinds"), (5, "mixed_kinds")]
    # Rows after a different first row are still checked by their own rules.
    assert "empty_completion" in validate_rows([{"text": "a"}, {"prompt": "p", "completion": ""}]).error_counts_by_code


def test_ambiguous_rows_follow_the_files_decisive_rows():
    plain = {"messages": [U, DONE]}
    weighted = {"messages": [U, {"role": "assistant", "content": "x", "weight": 1}]}
    report = validate_rows([plain, plain, weighted] + [plain] * 8)
    assert report.kinds == {"openai.chat": 11} and report.ok, report.text()


def test_openai_rules_are_one_dated_versioned_table_with_sources():
    assert OPENAI_RULES_VERSION == rules_module.RULES_VERSION
    assert len(OPENAI_RULES) >= 10 and len({r.id for r in OPENAI_RULES}) == len(OPENAI_RULES)
    for rule in OPENAI_RULES:
        assert rule.source and rule.recorded == OPENAI_RULES_VERSION and rule.severity in ("error", "warning")
        assert rule.code in CODES, rule
    report = validate_rows([{"messages": [U, DONE], "parallel_tool_calls": True}])
    assert report.summary.openai_rules_version == OPENAI_RULES_VERSION


def test_reports_stay_bounded():
    report = validate_rows([{"text": ""}] * 500, max_errors=5)
    assert (len(report.errors), report.error_count, report.truncated) == (5, 500, True)
    assert report.full_report_path

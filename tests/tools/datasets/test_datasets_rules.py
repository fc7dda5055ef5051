"""For every kind: valid samples, and samples with each error class (each finding code is produced here or in
the other validator tests; ``test_datasets_codes.py`` checks the union covers ``CODES``)."""

from __future__ import annotations

import copy
import json

import pytest

from agent_rl_sandbox.tools.datasets import KINDS, validate_rows

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"],
        },
    },
}


def trl_tool_row(args=None, tools=True):
    row = {
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": args if args is not None else {"city": "Paris"},
                        },
                    }
                ],
            },
            {"role": "tool", "name": "get_weather", "content": "18C"},
            {"role": "assistant", "content": "It is 18C in Paris."},
        ],
    }
    if tools:
        row["tools"] = [WEATHER_TOOL]
    return row


def openai_row(args='{"city": "Paris"}'):
    return {
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": args}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "assistant", "content": "It is 18C.", "weight": 1},
        ],
        "tools": [WEATHER_TOOL],
        "parallel_tool_calls": False,
    }


def mm_tool_row():
    return {
        "conversations": [
            {"role": "system", "content": "# Tools", "tools": json.dumps([WEATHER_TOOL])},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": json.dumps([{"name": "get_weather", "arguments": {"city": "Paris"}}]),
            },
            {"role": "tool", "content": '{"t": 18}'},
            {"role": "assistant", "content": "18C."},
        ]
    }


ATIF = {
    "schema_version": "ATIF-v1.5",
    "session_id": "s1",
    "agent": {"name": "a", "version": "1", "tool_definitions": [WEATHER_TOOL]},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Weather?", "timestamp": "2025-01-01T00:00:00Z"},
        {
            "step_id": 2,
            "source": "agent",
            "message": "",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "get_weather", "arguments": {"city": "Paris"}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "18C"}]},
        },
    ],
}

SUITE = {
    "agent": "claude-code",
    "rewardSpec": {"actionOrderRequired": True, "defaultPassReward": 1.0},
    "tasks": [
        {
            "id": "t1",
            "instruction": "Claim a.py, then edit it.",
            "expectedActions": [{"tool": "claim", "argsContains": ["a.py"]}],
            "expectedEvidence": [{"kind": "test", "contains": ["passed"], "exitCode": 0}],
            "passReward": 1.0,
        }
    ],
    "trajectories": [
        {
            "taskId": "t1",
            "actions": [{"tool": "claim", "args": {"path": "a.py"}}],
            "artifacts": [{"kind": "test", "output": "1 passed", "exitCode": 0}],
            "finalState": {"kind": "final", "text": "done"},
        }
    ],
    "unhooks": [{"name": "disable-adapter", "command": "ars adapters disable", "validated": True}],
}

U = {"role": "user", "content": "Hi"}
A = {"role": "assistant", "content": "Hello!"}

VALID: dict[str, list[list]] = {
    "trl.language_modeling": [[{"text": "The sky is blue."}], [{"messages": [U, A]}], [trl_tool_row()]],
    "trl.prompt_only": [[{"prompt": "The sky is", "solution": "blue"}], [{"prompt": [U]}]],
    "trl.prompt_completion": [[{"prompt": "The sky is", "completion": " blue."}], [{"prompt": [U], "completion": [A]}]],
    "trl.preference": [
        [{"prompt": "The sky is", "chosen": " blue.", "rejected": " green."}],
        [{"chosen": "The sky is blue.", "rejected": "The sky is green."}],
        [{"prompt": [U], "chosen": [A], "rejected": [{"role": "assistant", "content": "Go away."}]}],
        [{"chosen": [U, A], "rejected": [U, {"role": "assistant", "content": "Go away."}]}],
    ],
    "trl.unpaired_preference": [
        [{"prompt": "The sky is", "completion": " blue.", "label": True}],
        [{"prompt": [U], "completion": [A], "label": False}],
    ],
    "trl.stepwise_supervision": [[{"prompt": "9.8 or 9.11?", "completions": ["a", "b"], "labels": [True, False]}]],
    "minimind.sft": [[{"conversations": [U, A]}], [mm_tool_row()]],
    "minimind.dpo": [[{"chosen": [U, A], "rejected": [U, {"role": "assistant", "content": "No."}]}]],
    "minimind.rlaif": [[{"conversations": [U, {"role": "assistant", "content": "无"}]}]],
    "minimind.agentic": [[{"conversations": [U, {"role": "assistant", "content": ""}], "gt": [59]}]],
    "openai.chat": [
        [openai_row()],
        [
            {
                "messages": [
                    U,
                    {"role": "assistant", "content": "x", "weight": 0},
                    U,
                    {"role": "assistant", "content": "y", "weight": 1},
                ]
            }
        ],
    ],
    "trajectory_suite": [[SUITE]],
    "atif": [[ATIF]],
}
ALLOWED_WARNINGS = {"too_few_examples", "kind_ambiguous"}


def codes(report):
    return {f.code for f in report.errors} | {f.code for f in report.warnings}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_valid_samples_that_validate_clean(kind):
    assert VALID[kind]
    for rows in VALID[kind]:
        for forced in (kind, None):
            report = validate_rows(copy.deepcopy(rows), kind=forced)
            assert report.ok, (forced, report.text())
            assert {f.code for f in report.warnings} <= ALLOWED_WARNINGS, report.text()
            if forced is None and kind != "minimind.dpo":  # MiniMind DPO rows also read as TRL preference
                assert set(report.kinds) == {kind}, report.kinds


def m(role, content=None, **kw):
    out = {"role": role}
    if content is not None:
        out["content"] = content
    out.update(kw)
    return out


def tc(name, args, id=None):
    call = {"type": "function", "function": {"name": name, "arguments": args}}
    if id is not None:
        call["id"] = id
    return call


def _openai_with(**changes):
    row = openai_row()
    for path, value in changes.items():
        target = row
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        last = keys[-1]
        if value is _DEL:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return row


_DEL = object()

# (id, kind or None, rows, codes that must be reported)
CASES = [
    # --- TRL language modelling / conversations
    ("lm-empty-text", None, [{"text": "  "}], {"empty_text"}),
    ("lm-text-not-string", "trl.language_modeling", [{"text": 5}], {"wrong_type"}),
    ("lm-unknown-role", None, [{"messages": [m("robot", "x"), A]}], {"unknown_role"}),
    ("lm-missing-role", None, [{"messages": [{"content": "x"}, A]}], {"missing_key"}),
    ("lm-system-not-first", None, [{"messages": [U, m("system", "s"), A]}], {"system_not_first"}),
    ("lm-ends-with-user", None, [{"messages": [U, A, U]}], {"missing_final_assistant"}),
    ("lm-empty-user", None, [{"messages": [m("user", ""), A]}], {"empty_content"}),
    ("lm-empty-assistant", None, [{"messages": [U, m("assistant", "")]}], {"empty_completion"}),
    ("lm-null-assistant-no-calls", None, [{"messages": [U, m("assistant", None)]}], {"empty_completion"}),
    ("lm-two-users", None, [{"messages": [U, U, A]}], {"roles_not_alternating"}),
    ("lm-empty-messages", None, [{"messages": []}], {"empty_list"}),
    ("lm-messages-not-list", "trl.language_modeling", [{"messages": "hi"}], {"wrong_type"}),
    ("lm-content-wrong-type", None, [{"messages": [m("user", 5), A]}], {"wrong_type"}),
    ("lm-tools-not-declared", None, [trl_tool_row(tools=False)], {"tools_not_declared"}),
    (
        "lm-undeclared-tool",
        None,
        [{**trl_tool_row(), "tools": [{**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "name": "other"}}]}],
        {"undeclared_tool"},
    ),
    ("lm-args-invalid-json", None, [trl_tool_row(args="{city: Paris}")], {"arguments_invalid_json"}),
    ("lm-args-not-object", None, [trl_tool_row(args="[1, 2]")], {"arguments_not_object"}),
    (
        "lm-args-double-encoded",
        None,
        [trl_tool_row(args=json.dumps(json.dumps({"city": "x"})))],
        {"arguments_double_encoded"},
    ),
    ("lm-args-schema-type", None, [trl_tool_row(args={"city": 5})], {"arguments_schema"}),
    ("lm-args-schema-required", None, [trl_tool_row(args={"unit": "c"})], {"arguments_schema"}),
    ("lm-args-schema-enum", None, [trl_tool_row(args={"city": "x", "unit": "k"})], {"arguments_schema"}),
    ("lm-args-wrong-form", "trl.language_modeling", [trl_tool_row(args=5)], {"arguments_wrong_form"}),
    (
        "lm-call-missing-name",
        "trl.language_modeling",
        [{"messages": [U, m("assistant", tool_calls=[{"function": {"arguments": {}}}])], "tools": [WEATHER_TOOL]}],
        {"missing_key"},
    ),
    (
        "lm-call-bad-type",
        "trl.language_modeling",
        [
            {
                "messages": [
                    U,
                    m(
                        "assistant",
                        tool_calls=[{"type": "fn", "function": {"name": "get_weather", "arguments": {"city": "x"}}}],
                    ),
                ],
                "tools": [WEATHER_TOOL],
            }
        ],
        {"bad_value"},
    ),
    (
        "lm-tool-calls-on-user",
        None,
        [{"messages": [m("user", "x", tool_calls=[tc("get_weather", {"city": "x"})]), A], "tools": [WEATHER_TOOL]}],
        {"tool_calls_wrong_role"},
    ),
    (
        "lm-unanswered-call",
        None,
        [
            {
                "messages": [U, m("assistant", tool_calls=[tc("get_weather", {"city": "x"})]), U, A],
                "tools": [WEATHER_TOOL],
            }
        ],
        {"tool_call_unanswered"},
    ),
    ("lm-orphan-tool-response", None, [{"messages": [U, m("tool", "18C"), A]}], {"tool_response_orphan"}),
    (
        "lm-orphan-id",
        None,
        [
            {
                "messages": [
                    U,
                    m("assistant", tool_calls=[tc("get_weather", {"city": "x"}, id="a")]),
                    m("tool", "r", tool_call_id="b"),
                    A,
                ],
                "tools": [WEATHER_TOOL],
            }
        ],
        {"tool_response_orphan", "tool_call_unanswered"},
    ),
    ("lm-tools-string-invalid", None, [{**trl_tool_row(), "tools": "[...]"}], {"tools_invalid_json"}),
    ("lm-tools-string-bad-decl", None, [{**trl_tool_row(), "tools": json.dumps([{"x": 1}])}], {"bad_tool_declaration"}),
    ("lm-tools-wrong-type", "trl.language_modeling", [{**trl_tool_row(), "tools": 5}], {"wrong_type"}),
    (
        "lm-tool-decl-missing-name",
        "trl.language_modeling",
        [{**trl_tool_row(), "tools": [{"type": "function", "function": {"parameters": {}}}]}],
        {"missing_key"},
    ),
    (
        "lm-duplicate-tool-name",
        None,
        [{**trl_tool_row(), "tools": [WEATHER_TOOL, WEATHER_TOOL]}],
        {"duplicate_tool_name"},
    ),
    (
        "lm-tags-unbalanced",
        None,
        [{"text": '<tool_call>{"name": "f", "arguments": {}}'}],
        {"tool_call_tags_unbalanced"},
    ),
    ("lm-tags-close-only", None, [{"text": "x</tool_call>"}], {"tool_call_tags_unbalanced"}),
    (
        "lm-tags-nested",
        None,
        [{"text": "<tool_call><tool_call>{}</tool_call></tool_call>"}],
        {"tool_call_tags_unbalanced"},
    ),
    ("lm-tags-bad-json", None, [{"text": "<tool_call>\n{name: f}\n</tool_call>"}], {"tool_call_tag_invalid_json"}),
    ("lm-tags-no-name", None, [{"text": '<tool_call>{"arguments": {}}</tool_call>'}], {"tool_call_tag_invalid_json"}),
    (
        "lm-tags-in-assistant-undeclared",
        None,
        [
            {
                "messages": [U, m("assistant", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>')],
                "tools": [WEATHER_TOOL],
            }
        ],
        {"undeclared_tool"},
    ),
    # --- TRL prompt-only / prompt-completion / preference / unpaired / stepwise
    ("po-empty", None, [{"prompt": ""}], {"empty_content"}),
    ("po-wrong-type", "trl.prompt_only", [{"prompt": 5}], {"wrong_type"}),
    ("pc-mixed-in-row", "trl.prompt_completion", [{"prompt": "x", "completion": [A]}], {"wrong_type"}),
    ("pc-empty-completion", None, [{"prompt": "x", "completion": ""}], {"empty_completion"}),
    ("pc-empty-completion-list", None, [{"prompt": [U], "completion": []}], {"empty_list"}),
    ("pc-completion-not-assistant", None, [{"prompt": [U], "completion": [U, A]}], {"completion_not_assistant"}),
    ("pc-completion-ends-user", None, [{"prompt": [U], "completion": [A, U]}], {"missing_final_assistant"}),
    ("pref-equal", None, [{"prompt": "x", "chosen": "a", "rejected": "a"}], {"chosen_equals_rejected"}),
    ("pref-equal-conv", None, [{"chosen": [U, A], "rejected": [U, A]}], {"chosen_equals_rejected"}),
    ("pref-empty-chosen", None, [{"prompt": "x", "chosen": "", "rejected": "a"}], {"empty_completion"}),
    ("pref-no-shared-prompt", None, [{"chosen": [U, A], "rejected": [m("user", "Other"), A]}], {"no_shared_prompt"}),
    ("pref-chosen-prefix-of-rejected", None, [{"chosen": [U, A], "rejected": [U, A, U, A]}], {"no_divergence"}),
    ("pref-rejected-prefix-of-chosen", None, [{"chosen": [U, A, U, A], "rejected": [U, A]}], {"no_divergence"}),
    ("pref-text-prefix", None, [{"chosen": "The sky is", "rejected": "The sky is blue"}], {"no_divergence"}),
    (
        "pref-diverge-before-assistant",
        None,
        [{"chosen": [m("system", "s"), U, A], "rejected": [m("system", "s"), m("user", "Other"), A]}],
        {"prompt_mismatch"},
    ),
    ("pref-mixed-in-row", "trl.preference", [{"prompt": "x", "chosen": "a", "rejected": [A]}], {"wrong_type"}),
    (
        "pref-conflict",
        None,
        [{"prompt": "x", "chosen": "a", "rejected": "b"}, {"prompt": "x", "chosen": "b", "rejected": "a"}],
        {"conflicting_preference"},
    ),
    (
        "pref-conflict-conv",
        None,
        [
            {"prompt": [U], "chosen": [A], "rejected": [m("assistant", "No")]},
            {"prompt": [U], "chosen": [m("assistant", "No")], "rejected": [A]},
        ],
        {"conflicting_preference"},
    ),
    ("unpaired-label-type", None, [{"prompt": "x", "completion": "y", "label": "yes"}], {"wrong_type"}),
    (
        "unpaired-conflict",
        None,
        [{"prompt": "x", "completion": "y", "label": True}, {"prompt": " x ", "completion": "y", "label": False}],
        {"conflicting_preference"},
    ),
    (
        "step-labels-length",
        None,
        [{"prompt": "p", "completions": ["a", "b"], "labels": [True]}],
        {"labels_length_mismatch"},
    ),
    ("step-label-type", None, [{"prompt": "p", "completions": ["a"], "labels": [1]}], {"wrong_type"}),
    ("step-empty", None, [{"prompt": "p", "completions": [], "labels": []}], {"empty_list"}),
    ("step-empty-step", None, [{"prompt": "p", "completions": [""], "labels": [True]}], {"empty_completion"}),
    ("step-prompt-type", None, [{"prompt": ["p"], "completions": ["a"], "labels": [True]}], {"wrong_type"}),
    (
        "trl-mixed-styles",
        None,
        [{"prompt": "x", "completion": "y"}, {"prompt": [U], "completion": [A]}],
        {"mixed_styles", "type_drift"},
    ),
    # --- MiniMind
    ("mm-missing-content", None, [{"conversations": [{"role": "user"}, A]}], {"missing_key"}),
    (
        "mm-content-list",
        "minimind.sft",
        [{"conversations": [m("user", [{"type": "text", "text": "x"}]), A]}],
        {"wrong_type"},
    ),
    (
        "mm-tool-calls-list",
        None,
        [
            {
                "conversations": [
                    m("system", "s", tools=json.dumps([WEATHER_TOOL])),
                    U,
                    m("assistant", "", tool_calls=[{"name": "get_weather", "arguments": {"city": "x"}}]),
                    m("tool", "r"),
                    A,
                ]
            }
        ],
        {"tool_calls_wrong_form"},
    ),
    ("mm-tools-list", None, [{"conversations": [m("system", "s", tools=[WEATHER_TOOL]), U, A]}], {"tools_wrong_form"}),
    (
        "mm-tools-misplaced",
        None,
        [{"conversations": [U, m("assistant", "x", tools=json.dumps([WEATHER_TOOL]))]}],
        {"tools_misplaced"},
    ),
    (
        "mm-tools-misplaced-wrong-form",
        None,
        [{"conversations": [U, m("assistant", "x", tools=[WEATHER_TOOL])]}],
        {"tools_wrong_form"},
    ),
    (
        "mm-tool-calls-invalid-json",
        None,
        [
            {
                "conversations": [
                    m("system", "s", tools=json.dumps([WEATHER_TOOL])),
                    U,
                    m("assistant", "", tool_calls="[{name: x}]"),
                    m("tool", "r"),
                    A,
                ]
            }
        ],
        {"tool_calls_invalid_json"},
    ),
    (
        "mm-tool-call-bad",
        None,
        [
            {
                "conversations": [
                    m("system", "s", tools=json.dumps([WEATHER_TOOL])),
                    U,
                    m("assistant", "", tool_calls=json.dumps([{"arguments": {}}])),
                    m("tool", "r"),
                    A,
                ]
            }
        ],
        {"bad_tool_call"},
    ),
    (
        "mm-tool-call-undeclared",
        None,
        [
            {
                "conversations": [
                    m("system", "s", tools=json.dumps([WEATHER_TOOL])),
                    U,
                    m("assistant", "", tool_calls=json.dumps([{"name": "nope", "arguments": {}}])),
                    m("tool", "r"),
                    A,
                ]
            }
        ],
        {"undeclared_tool"},
    ),
    (
        "mm-tool-calls-no-tools",
        None,
        [
            {
                "conversations": [
                    U,
                    m("assistant", "", tool_calls=json.dumps([{"name": "f", "arguments": {}}])),
                    m("tool", "r"),
                    A,
                ]
            }
        ],
        {"tools_not_declared"},
    ),
    (
        "mm-dpo-prompt-mismatch",
        "minimind.dpo",
        [{"chosen": [U, A], "rejected": [m("user", "Other"), A]}],
        {"prompt_mismatch"},
    ),
    (
        "mm-dpo-ends-user",
        "minimind.dpo",
        [{"chosen": [U, A, U], "rejected": [U, A, m("user", "x")]}],
        {"missing_final_assistant"},
    ),
    ("mm-dpo-not-list", "minimind.dpo", [{"chosen": "a", "rejected": "b"}], {"wrong_type"}),
    ("mm-rlaif-no-placeholder", "minimind.rlaif", [{"conversations": [U]}], {"missing_placeholder"}),
    (
        "mm-rlaif-not-alternating",
        "minimind.rlaif",
        [{"conversations": [U, U, m("assistant", "无")]}],
        {"roles_not_alternating"},
    ),
    ("mm-rlaif-no-user", "minimind.rlaif", [{"conversations": [m("assistant", "无")]}], {"no_user_message"}),
    ("mm-agentic-gt-type", None, [{"conversations": [U, m("assistant", "")], "gt": 59}], {"wrong_type"}),
    ("mm-agentic-gt-empty", None, [{"conversations": [U, m("assistant", "")], "gt": []}], {"empty_gt"}),
    ("mm-wrong-stage-keys", "minimind.dpo", [{"conversations": [U, A]}], {"wrong_kind_keys"}),
    # --- OpenAI
    ("oa-args-object", "openai.chat", [openai_row(args={"city": "Paris"})], {"arguments_wrong_form"}),
    ("oa-unknown-key", None, [_openai_with(messages__1__extra="x")], {"unknown_key"}),
    ("oa-unknown-role", None, [_openai_with(messages__1__role="developer")], {"unknown_role"}),
    ("oa-bad-weight", None, [_openai_with(messages__4__weight=2)], {"bad_value"}),
    ("oa-weight-on-user", None, [_openai_with(messages__1__weight=1)], {"weight_not_assistant"}),
    ("oa-all-weight-zero", None, [{"messages": [U, m("assistant", "x", weight=0)]}], {"no_trained_message"}),
    ("oa-missing-call-id", None, [_openai_with(messages__2__tool_calls__0__id=_DEL)], {"missing_key"}),
    ("oa-tool-missing-call-id", None, [_openai_with(messages__3__tool_call_id=_DEL)], {"missing_key"}),
    ("oa-parallel-type", None, [_openai_with(parallel_tool_calls="no")], {"wrong_type"}),
    ("oa-unknown-field", None, [_openai_with(metadata={"a": 1})], {"unknown_field"}),
    ("oa-no-assistant", None, [{"messages": [U], "parallel_tool_calls": True}], {"no_assistant_message"}),
    ("oa-ends-user", None, [{"messages": [U, m("assistant", "x", weight=1), U]}], {"missing_final_assistant"}),
    ("oa-tools-string", "openai.chat", [_openai_with(tools=json.dumps([WEATHER_TOOL]))], {"wrong_type"}),
    (
        "oa-tool-decl-missing-type",
        "openai.chat",
        [_openai_with(tools=[{"function": WEATHER_TOOL["function"]}])],
        {"missing_key"},
    ),
    (
        "oa-too-many-tools",
        "openai.chat",
        [_openai_with(tools=[{"type": "function", "function": {"name": f"f{i}"}} for i in range(129)])],
        {"bad_value"},
    ),
    ("oa-tool-calls-null", "openai.chat", [_openai_with(messages__1__tool_calls=None)], {"wrong_type"}),
    ("oa-functions-type", "openai.chat", [_openai_with(functions="x")], {"wrong_type"}),
    ("oa-function-call-type", "openai.chat", [_openai_with(messages__4__function_call="x")], {"wrong_type"}),
    ("oa-refusal-type", "openai.chat", [_openai_with(messages__4__refusal=5)], {"wrong_type"}),
    (
        "oa-system-later-warning",
        None,
        [_openai_with(messages__3={"role": "system", "content": "s"})],
        {"system_not_first"},
    ),
    # --- ATIF
    ("atif-version", "atif", [{**ATIF, "schema_version": "ATIF-v9.9"}], {"unknown_version"}),
    ("atif-version-bad", "atif", [{**ATIF, "schema_version": "v1"}], {"bad_value"}),
    ("atif-empty-steps", "atif", [{**ATIF, "steps": []}], {"empty_list"}),
    ("atif-agent-name", "atif", [{**ATIF, "agent": {"version": "1"}}], {"missing_key"}),
]


def _atif_step_case(name, step_changes, code, step=1):
    doc = copy.deepcopy(ATIF)
    doc["steps"][step].update(step_changes)
    for k, v in list(doc["steps"][step].items()):
        if v is _DEL:
            del doc["steps"][step][k]
    return (name, "atif", [doc], {code})


CASES += [
    _atif_step_case("atif-step-seq", {"step_id": 5}, "step_id_not_sequential"),
    _atif_step_case("atif-step-zero", {"step_id": 0}, "bad_value"),
    _atif_step_case("atif-step-id-type", {"step_id": "2"}, "wrong_type"),
    _atif_step_case("atif-timestamp", {"timestamp": "yesterday"}, "bad_timestamp"),
    _atif_step_case("atif-source", {"source": "robot"}, "bad_value"),
    _atif_step_case("atif-missing-message", {"message": _DEL}, "missing_key"),
    _atif_step_case("atif-agent-only", {"model_name": "gpt"}, "agent_only_field", step=0),
    _atif_step_case("atif-unknown-step-field", {"foo": 1}, "unknown_field"),
    _atif_step_case(
        "atif-dup-call-id",
        {
            "tool_calls": [
                {"tool_call_id": "c1", "function_name": "get_weather", "arguments": {"city": "a"}},
                {"tool_call_id": "c1", "function_name": "get_weather", "arguments": {"city": "b"}},
            ]
        },
        "duplicate_tool_call_id",
    ),
    _atif_step_case(
        "atif-obs-orphan",
        {"observation": {"results": [{"source_call_id": "zz", "content": "x"}]}},
        "observation_orphan",
    ),
    _atif_step_case(
        "atif-undeclared",
        {"tool_calls": [{"tool_call_id": "c1", "function_name": "nope", "arguments": {}}]},
        "undeclared_tool",
    ),
    _atif_step_case(
        "atif-args-schema",
        {"tool_calls": [{"tool_call_id": "c1", "function_name": "get_weather", "arguments": {"city": 1}}]},
        "arguments_schema",
    ),
    _atif_step_case(
        "atif-args-string",
        {"tool_calls": [{"tool_call_id": "c1", "function_name": "get_weather", "arguments": "{}"}]},
        "arguments_wrong_form",
    ),
    _atif_step_case("atif-call-missing", {"tool_calls": [{"tool_call_id": "c1"}]}, "missing_key"),
    _atif_step_case("atif-obs-no-results", {"observation": {}}, "missing_key"),
    ("atif-no-tool-defs", "atif", [{**ATIF, "agent": {"name": "a", "version": "1"}}], {"tools_not_declared"}),
    (
        "atif-bad-tool-def",
        "atif",
        [{**ATIF, "agent": {"name": "a", "version": "1", "tool_definitions": [{"type": "function"}]}}],
        {"bad_tool_declaration"},
    ),
    # --- trajectory suites
    ("suite-empty-tasks", "trajectory_suite", [{**SUITE, "tasks": []}], {"empty_list"}),
    ("suite-missing-tasks", "trajectory_suite", [{"agent": "x", "trajectories": []}], {"wrong_kind_keys"}),
    ("suite-dup-task", "trajectory_suite", [{**SUITE, "tasks": SUITE["tasks"] * 2}], {"duplicate_task_id"}),
    (
        "suite-unknown-task",
        "trajectory_suite",
        [{**SUITE, "trajectories": [{"taskId": "nope", "actions": []}]}],
        {"unknown_task_id"},
    ),
    ("suite-task-no-id", "trajectory_suite", [{**SUITE, "tasks": [{"expectedActions": []}]}], {"missing_key"}),
    (
        "suite-action-no-tool",
        "trajectory_suite",
        [{**SUITE, "trajectories": [{"taskId": "t1", "actions": [{"args": {}}]}]}],
        {"missing_key"},
    ),
    (
        "suite-args-type",
        "trajectory_suite",
        [{**SUITE, "trajectories": [{"taskId": "t1", "actions": [{"tool": "x", "args": "a"}]}]}],
        {"wrong_type"},
    ),
    ("suite-reward-type", "trajectory_suite", [{**SUITE, "tasks": [{"id": "t1", "passReward": "1"}]}], {"wrong_type"}),
    (
        "suite-flag-string",
        "trajectory_suite",
        [{**SUITE, "rewardSpec": {"actionOrderRequired": "false"}}],
        {"wrong_type"},
    ),
    (
        "suite-null-exit-code",
        "trajectory_suite",
        [{**SUITE, "tasks": [{"id": "t1", "expectedEvidence": [{"kind": "test", "exitCode": None}]}]}],
        {"port_daddy_misread"},
    ),
    (
        "suite-args-contains-type",
        "trajectory_suite",
        [{**SUITE, "tasks": [{"id": "t1", "expectedActions": [{"tool": "x", "argsContains": {"a": 1}}]}]}],
        {"wrong_type"},
    ),
    ("suite-empty-task-id", "trajectory_suite", [{**SUITE, "tasks": [{"id": ""}]}], {"bad_value"}),
    # --- kinds
    ("not-an-object", None, [[1, 2]], {"not_an_object"}),
    ("unknown-kind", None, [{"foo": 1}], {"unknown_kind"}),
    ("mixed-kinds", None, [{"text": "a"}, {"prompt": "p", "completion": "c"}], {"mixed_kinds"}),
    ("ambiguous-dpo", None, [{"chosen": [U, A], "rejected": [U, m("assistant", "No")]}], {"kind_ambiguous"}),
    ("duplicate-row", None, [{"text": "a"}, {"text": "b"}, {"text": "a"}], {"duplicate_row"}),
    ("detected-kind-missing-keys", None, [{"schema_version": "ATIF-v1.5", "steps": []}], {"missing_key"}),
]


@pytest.mark.parametrize("case_id, kind, rows, expected", CASES, ids=[c[0] for c in CASES])
def test_error_class_is_reported(case_id, kind, rows, expected):
    report = validate_rows(copy.deepcopy(rows), kind=kind, max_errors=1000)
    found = codes(report)
    assert expected <= found, (expected - found, report.text(40))
    assert "internal_error" not in found
    for f in report.errors + report.warnings:
        assert f.line is None or 1 <= f.line <= len(rows)
        assert f.json_path.startswith("$")


def test_findings_carry_line_json_path_and_kind():
    rows = [{"messages": [U, A]}, {"messages": [U, m("assistant", "ok"), m("robot", "x")]}]
    report = validate_rows(rows)
    f = next(f for f in report.errors if f.code == "unknown_role")
    assert (f.line, f.json_path, f.kind) == (2, "$.messages[2].role", "trl.language_modeling")
    assert "robot" in f.message


def test_tool_call_only_assistant_turn_with_null_content_is_valid():
    row = trl_tool_row()
    row["messages"][2]["content"] = None
    assert validate_rows([row]).ok
    row["messages"][2]["content"] = ""
    assert validate_rows([row]).ok


def test_final_assistant_tool_call_is_the_target_not_an_orphan():
    """OpenAI function-calling examples end on the assistant's call (the cookbook drone rows)."""
    row = openai_row()
    row["messages"] = row["messages"][:3]
    report = validate_rows([row])
    assert report.ok, report.text()


# ----------------------------------------------------------------------------------------------------
# The hand-written checks agree with the JSON Schema files on structural errors.

from jsonschema import Draft202012Validator  # noqa: E402

from agent_rl_sandbox.tools.datasets import STRUCTURAL_CODES, load_schema  # noqa: E402


def _agree(row, kind):
    """(schema says invalid, validator reports a structural error) for one row validated as ``kind``."""
    schema_errors = list(Draft202012Validator(load_schema(kind)).iter_errors(row))
    report = validate_rows([copy.deepcopy(row)], kind=kind, max_errors=1000)
    structural = [f for f in report.errors if f.code in STRUCTURAL_CODES]
    return bool(schema_errors), bool(structural), schema_errors, report


@pytest.mark.parametrize("kind", KINDS)
def test_schema_accepts_every_valid_sample(kind):
    for rows in VALID[kind]:
        for row in rows:
            bad, structural, errs, report = _agree(row, kind)
            assert not bad, [e.message for e in errs]
            assert not structural, report.text()


@pytest.mark.parametrize("case_id, kind, rows, expected", CASES, ids=[c[0] for c in CASES])
def test_schema_and_checks_agree_on_each_bad_fixture(case_id, kind, rows, expected):
    for row in rows:
        k = kind or next(iter(validate_rows([copy.deepcopy(row)]).kinds))
        if k == "unknown":
            continue
        bad, structural, errs, report = _agree(row, k)
        assert bad == structural, (k, [e.message for e in errs][:3], report.text(10))


_REPLACEMENTS = (None, 5, "s", [], {}, True, [5])


def _mutations(value, path=()):
    """Every single-point mutation: drop a key, or replace a value by one of a few JSON values."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield ("del", path + (k,))
            for r in _REPLACEMENTS:
                yield ("set", path + (k,), r)
            yield from _mutations(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            for r in _REPLACEMENTS:
                yield ("set", path + (i,), r)
            yield from _mutations(v, path + (i,))


def _apply(row, mutation):
    row = copy.deepcopy(row)
    target = row
    path = mutation[1]
    for k in path[:-1]:
        target = target[k]
    if mutation[0] == "del":
        del target[path[-1]]
    else:
        target[path[-1]] = copy.deepcopy(mutation[2])
    return row


@pytest.mark.parametrize("kind", KINDS)
def test_schema_and_checks_agree_on_every_single_point_mutation(kind):
    """Drop any key or retype any value of each valid sample: the schema and the validator must agree on
    whether the row is structurally invalid."""
    checked = 0
    for rows in VALID[kind]:
        for row in rows:
            for mutation in _mutations(row):
                mutated = _apply(row, mutation)
                bad, structural, errs, report = _agree(mutated, kind)
                assert bad == structural, (mutation, [e.message for e in errs][:3], report.text(8))
                checked += 1
    assert checked > 20


def test_identical_looking_tool_declarations_are_not_confused_by_true_equals_one():
    """The tools cache recognises repeated declarations by equality, where True == 1: it must not hide
    an error (or a type drift) in a declaration that differs only by bool vs number."""
    good = copy.deepcopy(openai_row())
    good["tools"][0]["function"]["strict"] = True
    bad = copy.deepcopy(openai_row())
    bad["tools"][0]["function"]["strict"] = 1
    report = validate_rows([good, bad], kind="openai.chat")
    assert [(f.line, f.code, f.json_path) for f in report.errors] == [(2, "wrong_type", "$.tools[0].function.strict")]
    drift = validate_rows(
        [
            {**trl_tool_row(), "tools": [{**WEATHER_TOOL, "x": True}]},
            {**trl_tool_row(), "tools": [{**WEATHER_TOOL, "x": 1}]},
        ]
    )
    assert [(f.line, f.code) for f in drift.errors] == [(2, "type_drift")]


def test_prefix_pair_is_an_error_because_trl_extract_prompt_mangles_it():
    """The reason for ``no_divergence``: TRL's own implicit-prompt extraction, run on a pair where chosen
    is a strict prefix of rejected, returns a prompt one turn short (checked against trl when installed)."""
    row = {"chosen": [U, A], "rejected": [U, A, m("user", "More?"), m("assistant", "No.")]}
    report = validate_rows([copy.deepcopy(row)])
    err = next(e for e in report.errors if e.code == "no_divergence")
    assert (err.line, err.json_path) == (1, "$.rejected")
    assert "chosen is a strict prefix of rejected (2 of 4 turns)" in err.message
    # a real divergence after a shared prompt, and an explicit prompt, stay clean of it
    ok = [
        {"chosen": [U, A], "rejected": [U, m("assistant", "Other.")]},
        {"prompt": "p", "chosen": "a", "rejected": "ab"},
    ]
    assert "no_divergence" not in codes(validate_rows(ok))
    data_utils = pytest.importorskip("trl.data_utils")
    out = data_utils.extract_prompt(copy.deepcopy(row))
    assert out["prompt"] == [U] and out["chosen"] == [A]  # the assistant turn became the "completion" ...
    assert out["rejected"][0] == A  # ... and the rejected side now starts with the same turn


def test_openai_row_with_every_assistant_weight_zero_is_an_error():
    rows = [{"messages": [U, m("assistant", "a", weight=0), m("user", "b"), m("assistant", "c", weight=0)]}]
    report = validate_rows(rows, kind="openai.chat")
    err = next(e for e in report.errors if e.code == "no_trained_message")
    assert err.json_path == "$.messages" and "weight 1" in err.message
    rows[0]["messages"][3]["weight"] = 1
    assert "no_trained_message" not in codes(validate_rows(rows, kind="openai.chat"))

"""Real sample files (tests/fixtures/samples, copied from the shared set with their provenance READMEs):
each validates clean or gives exactly the documented findings (docs/dataset-validation.md, 'Samples')."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_rl_sandbox.tools.datasets import validate_file

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "samples"

# file -> (kinds, error codes with counts, warning codes with counts)
EXPECTED = {
    "trl/language_modeling_standard.jsonl": ({"trl.language_modeling": 1}, {}, {}),
    "trl/prompt_completion_conversational.jsonl": ({"trl.prompt_completion": 1}, {}, {}),
    "trl/stepwise_supervision.jsonl": ({"trl.stepwise_supervision": 1}, {}, {}),
    "trl/tool_calling_sft.jsonl": ({"trl.language_modeling": 1}, {}, {}),
    # The doc lists every style of example in one place; one dataset must not mix them.
    "trl/preference.jsonl": ({"trl.preference": 4}, {"mixed_styles": 1, "type_drift": 3}, {}),
    "trl/unpaired_preference.jsonl": ({"trl.unpaired_preference": 2}, {"mixed_styles": 1, "type_drift": 2}, {}),
    # MiniMind DPO rows have the same shape as TRL implicit-prompt conversational preference rows.
    "minimind/dpo.jsonl": ({"trl.preference": 1}, {}, {"kind_ambiguous": 1}),
    "minimind/lora_sft.jsonl": ({"minimind.sft": 4}, {}, {}),
    "minimind/pretrain_text.jsonl": ({"trl.language_modeling": 3}, {}, {}),
    "minimind/rlaif.jsonl": ({"minimind.rlaif": 1}, {}, {}),
    # The README abbreviates the tool list as the literal string "[...]", which is not JSON.
    "minimind/sft_conversations.jsonl": ({"minimind.sft": 2}, {"tools_invalid_json": 1}, {}),
    "minimind/sft_toolcall.jsonl": ({"minimind.sft": 1}, {"tools_invalid_json": 1}, {}),
    # Real OpenAI rows; the files are excerpts (2 and 3 rows), under OpenAI's 10-example minimum.
    "openai-chat-ft/openai-cookbook__drone_training.first2.jsonl": ({"openai.chat": 2}, {}, {"too_few_examples": 1}),
    "openai-chat-ft/multi_turn_weight.from-docs.jsonl": ({"openai.chat": 3}, {}, {"too_few_examples": 1}),
    "atif/openhands__hello-world.trajectory.json": ({"atif": 1}, {}, {}),
}


def test_every_copied_sample_is_pinned():
    files = {str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.json*")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample(name):
    kinds, errors, warnings = EXPECTED[name]
    report = validate_file(SAMPLES / name)
    assert report.kinds == kinds, report.text()
    assert report.error_counts_by_code == errors, report.text()
    assert report.warning_counts_by_code == warnings, report.text()


def test_minimind_samples_with_their_own_kinds():
    assert validate_file(SAMPLES / "minimind/dpo.jsonl", kind="minimind.dpo").ok
    assert validate_file(SAMPLES / "minimind/rlaif.jsonl", kind="minimind.rlaif").ok
    report = validate_file(SAMPLES / "minimind/sft_conversations.jsonl", kind="minimind.sft")
    [f] = report.errors
    assert (f.line, f.json_path) == (2, "$.conversations[0].tools")


def test_drone_rows_summary():
    report = validate_file(SAMPLES / "openai-chat-ft/openai-cookbook__drone_training.first2.jsonl")
    s = report.summary
    assert s.tool_calls == {"takeoff_drone": 2} and s.rows_with_tools == 2
    assert s.openai_rules_version
    assert s.roles == {"system": 2, "user": 2, "assistant": 2}


def test_atif_sample_summary():
    s = validate_file(SAMPLES / "atif/openhands__hello-world.trajectory.json").summary
    assert s.tool_calls == {"str_replace_editor": 1, "finish": 1}
    assert s.roles == {"system": 3, "user": 1, "agent": 2}

"""OpenAI chat fine-tuning rules: one dated, versioned table, each rule with its source.

OpenAI changes what its fine-tuning endpoint accepts over time (``function_call`` gave way to
``tool_calls``; ``weight`` appeared; per-model token limits move). Every OpenAI-specific constant the
validator uses lives here, so an update is one edit with one date.

Sources (checked on ``RULES_CHECKED``):
- G: fine-tuning guide, https://platform.openai.com/docs/guides/supervised-fine-tuning (and the older
  https://platform.openai.com/docs/guides/fine-tuning), sections "Example format", "Multi-turn chat
  examples" (``weight``), "Fine-tuning with tools / function calling".
- A: API reference, "The chat input format" (``FineTuneChatRequestInput``):
  https://platform.openai.com/docs/api-reference/fine-tuning/chat-input
- C: OpenAI cookbook ``examples/Chat_finetuning_data_prep.ipynb`` (format error types
  ``data_type``, ``missing_messages_list``, ``message_missing_key``, ``message_unrecognized_key``,
  ``unrecognized_role``, ``missing_content``, ``example_missing_assistant_message``).
"""

from __future__ import annotations

from dataclasses import dataclass

RULES_VERSION = "2026-11-29"
"""Version of this table: the date its rules were last checked against the sources."""
RULES_CHECKED = RULES_VERSION
_R = RULES_VERSION


@dataclass(frozen=True)
class OpenAIRule:
    """One rule: a stable id, what it requires, the finding code it produces, when recorded, and its source."""

    id: str
    requirement: str
    code: str
    severity: str
    recorded: str
    """Date the rule was recorded (checked against its source) in this table."""
    source: str


ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool", "function"})
"""Message roles of ``FineTuneChatRequestInput`` (A). ``function`` is deprecated but accepted."""

MESSAGE_KEYS: frozenset[str] = frozenset(
    {
        "role",
        "content",
        "name",
        "weight",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "refusal",
        "audio",
    }
)
"""Keys a message may carry (A: union over the system, user, assistant, tool and function messages)."""

TOP_LEVEL_KEYS: frozenset[str] = frozenset({"messages", "tools", "parallel_tool_calls", "functions"})
"""Keys of one training example (A)."""

WEIGHT_VALUES: tuple[int, ...] = (0, 1)
"""Allowed ``weight`` values, assistant messages only (G, 'Multi-turn chat examples')."""

MAX_FUNCTIONS = 128
"""At most this many entries in ``tools``/``functions`` (A: ``functions`` has ``<= 128 items``)."""

MIN_EXAMPLES = 10
"""A training file needs at least 10 examples (G; Azure OpenAI docs say the same)."""

RULES: tuple[OpenAIRule, ...] = (
    OpenAIRule(
        "OA-ROW",
        "each line is a JSON object with a non-empty 'messages' list",
        "missing_key",
        "error",
        _R,
        "C data_type/missing_messages_list; A messages >= 1 item",
    ),
    OpenAIRule(
        "OA-ROLE",
        "role is one of system, user, assistant, tool, function",
        "unknown_role",
        "error",
        _R,
        "C unrecognized_role; A message variants",
    ),
    OpenAIRule(
        "OA-KEYS",
        "messages carry only the keys of MESSAGE_KEYS",
        "unknown_key",
        "error",
        _R,
        "C message_unrecognized_key; A message variants",
    ),
    OpenAIRule(
        "OA-CONTENT",
        "content is non-empty text unless the assistant turn calls tools (assistant: empty_completion)",
        "empty_content",
        "error",
        _R,
        "C missing_content",
    ),
    OpenAIRule(
        "OA-ASSISTANT",
        "every example has at least one assistant message",
        "no_assistant_message",
        "error",
        _R,
        "C example_missing_assistant_message",
    ),
    OpenAIRule(
        "OA-FINAL",
        "the final message is the assistant completion",
        "missing_final_assistant",
        "warning",
        _R,
        "G 'Example format' (the final entry is the completion)",
    ),
    OpenAIRule(
        "OA-WEIGHT",
        "weight is 0 or 1",
        "bad_value",
        "error",
        _R,
        "G 'Multi-turn chat examples'; A assistant message 'weight'",
    ),
    OpenAIRule(
        "OA-WEIGHT-ROLE",
        "weight appears only on assistant messages",
        "weight_not_assistant",
        "error",
        _R,
        "G 'Multi-turn chat examples'",
    ),
    OpenAIRule(
        "OA-WEIGHT-ZERO",
        "at least one assistant message is trained (weight 1 or absent)",
        "no_trained_message",
        "error",
        _R,
        "G 'Multi-turn chat examples'",
    ),
    OpenAIRule(
        "OA-ARGS",
        "tool_calls[].function.arguments is a string holding a JSON object",
        "arguments_wrong_form",
        "error",
        _R,
        "G function calling examples; A",
    ),
    OpenAIRule(
        "OA-CALL-ID",
        "tool_calls[] have id and type 'function'; tool messages have tool_call_id",
        "missing_key",
        "error",
        _R,
        "A assistant/tool message",
    ),
    OpenAIRule(
        "OA-TOOLS",
        "tools[] are {'type': 'function', 'function': {'name', 'parameters'?}}, <= 128",
        "missing_key",
        "error",
        _R,
        "A tools/functions",
    ),
    OpenAIRule("OA-PARALLEL", "parallel_tool_calls is a boolean", "wrong_type", "error", _R, "A parallel_tool_calls"),
    OpenAIRule(
        "OA-TOP",
        "an example carries only messages, tools, parallel_tool_calls, functions",
        "unknown_field",
        "warning",
        _R,
        "A FineTuneChatRequestInput",
    ),
    OpenAIRule(
        "OA-MIN",
        "a training file has at least 10 examples",
        "too_few_examples",
        "warning",
        _R,
        "G 'Preparing your dataset'",
    ),
    OpenAIRule(
        "OA-TOKENS",
        "examples longer than the model's context are truncated (model dependent, e.g. "
        "65,536 tokens for gpt-4o-mini); checked only through max_length",
        "overlong_row",
        "warning",
        _R,
        "G 'Token limits'",
    ),
)
"""The table. ``docs/dataset-validation.md`` renders it; tests check each code is produced."""

RULES_BY_ID: dict[str, OpenAIRule] = {r.id: r for r in RULES}

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


@dataclass(frozen=True)
class OpenAIRule:
    """One rule: a stable id, what it requires, the finding code it produces, since when, and where from."""

    id: str
    requirement: str
    code: str
    severity: str
    since: str
    """Date the rule was first recorded here (the source may be older)."""
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
    OpenAIRule("OA-ROW", "each line is a JSON object with a non-empty 'messages' list", "missing_key",
               "error", "2023-08-22", "C data_type/missing_messages_list; A messages >= 1 item"),
    OpenAIRule("OA-ROLE", "role is one of system, user, assistant, tool, function", "unknown_role",
               "error", "2023-08-22", "C unrecognized_role; A message variants"),
    OpenAIRule("OA-KEYS", "messages carry only the keys of MESSAGE_KEYS", "unknown_key",
               "error", "2023-08-22", "C message_unrecognized_key; A message variants"),
    OpenAIRule("OA-CONTENT", "content is non-empty text unless the assistant turn calls tools",
               "empty_content", "error", "2023-08-22", "C missing_content"),
    OpenAIRule("OA-ASSISTANT", "every example has at least one assistant message", "no_assistant_message",
               "error", "2023-08-22", "C example_missing_assistant_message"),
    OpenAIRule("OA-FINAL", "the final message is the assistant completion", "missing_final_assistant",
               "warning", "2023-08-22", "G 'Example format' (the final entry is the completion)"),
    OpenAIRule("OA-WEIGHT", "weight is 0 or 1 and only on assistant messages", "bad_weight",
               "error", "2024-04-01", "G 'Multi-turn chat examples'"),
    OpenAIRule("OA-ARGS", "tool_calls[].function.arguments is a string holding a JSON object",
               "arguments_wrong_form", "error", "2023-11-06", "G function calling examples; A"),
    OpenAIRule("OA-CALL-ID", "tool_calls[] have id and type 'function'; tool messages have tool_call_id",
               "missing_key", "error", "2023-11-06", "A assistant/tool message"),
    OpenAIRule("OA-TOOLS", "tools[] are {'type': 'function', 'function': {'name', 'parameters'?}}, <= 128",
               "bad_tool_declaration", "error", "2023-11-06", "A tools/functions"),
    OpenAIRule("OA-PARALLEL", "parallel_tool_calls is a boolean", "wrong_type",
               "error", "2024-04-01", "A parallel_tool_calls"),
    OpenAIRule("OA-TOP", "an example carries only messages, tools, parallel_tool_calls, functions",
               "unknown_field", "warning", "2024-04-01", "A FineTuneChatRequestInput"),
    OpenAIRule("OA-MIN", "a training file has at least 10 examples", "too_few_examples",
               "warning", "2023-08-22", "G 'Preparing your dataset'"),
    OpenAIRule("OA-TOKENS", "examples longer than the model's context are truncated (model dependent, e.g. "
               "65,536 tokens for gpt-4o-mini); checked only through max_length", "overlong_row",
               "warning", "2024-07-18", "G 'Token limits'"),
)
"""The table. ``docs/dataset-validation.md`` renders it; tests check each code is produced."""

RULES_BY_ID: dict[str, OpenAIRule] = {r.id: r for r in RULES}

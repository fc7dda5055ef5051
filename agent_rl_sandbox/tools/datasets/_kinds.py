"""Dataset kinds: their names, the keys that identify them, and per-row kind detection.

A *kind* is a row shape that one trainer or service reads. Detection looks at one row at a time (never
at the first row only), so a file mixing kinds is reported with the first line of each kind.

Sources:
- TRL dataset formats: https://huggingface.co/docs/trl/dataset_formats (``docs/source/dataset_formats.md``
  in huggingface/trl, commit 2ee37b88). Tool use (a ``tools`` column next to ``messages``) is a property of
  conversational rows there, not a kind of its own, and it is modelled that way here.
- MiniMind formats: README of jingyaogong/minimind (snapshot d65ef2c0) and ``dataset/lm_dataset.py``
  (``SFTDataset`` reads ``conversations``, ``DPODataset`` reads ``chosen``/``rejected``,
  ``RLAIFDataset`` drops the final assistant placeholder, ``AgentRLDataset`` also reads ``gt``).
- OpenAI chat fine-tuning rows: https://platform.openai.com/docs/guides/supervised-fine-tuning.
- ATIF: the Agent Trajectory Interchange Format RFC 0001 of laude-institute/harbor (v1.5) and its pydantic
  models (``harbor/models/trajectories``).
- Trajectory suites: the Port Daddy suite JSON (``agent``, ``rewardSpec``, ``tasks``, ``trajectories``,
  ``unhooks``) described in this project's DESIGN.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS: tuple[str, ...] = (
    "trl.language_modeling",
    "trl.prompt_only",
    "trl.prompt_completion",
    "trl.preference",
    "trl.unpaired_preference",
    "trl.stepwise_supervision",
    "minimind.sft",
    "minimind.dpo",
    "minimind.rlaif",
    "minimind.agentic",
    "openai.chat",
    "trajectory_suite",
    "atif",
)
"""Every kind the validator knows, in a stable order (the names used by ``kind=`` and in reports)."""

KIND_ALIASES: dict[str, str] = {
    "sft": "trl.language_modeling",
    "dpo": "trl.preference",
    "kto": "trl.unpaired_preference",
    "grpo": "trl.prompt_only",
    "minimind_sft": "minimind.sft",
    "minimind_dpo": "minimind.dpo",
    "minimind_agentic": "minimind.agentic",
    "suite": "trajectory_suite",
}
"""``export``'s format names (``tools.trajectories.FORMATS``), accepted wherever a kind is forced
(``validate --kind dpo``, ``dataset_validate`` ``kind``) and read as the kind that format writes;
``atif`` is both. Reports always name the kind itself (``trl.preference``)."""


def canonical_kind(kind: str) -> str | None:
    """``kind`` itself when it is one of :data:`KINDS`, the kind an export format alias names
    (:data:`KIND_ALIASES`: ``"dpo"`` -> ``"trl.preference"``), else ``None``."""
    return kind if kind in KINDS else KIND_ALIASES.get(kind)


def kinds_help() -> str:
    """The valid values of a forced kind, for an error's next step: every kind, then the export
    format names that are aliases of one (``dpo = trl.preference``)."""
    aliases = ", ".join(f"{a} = {k}" for a, k in KIND_ALIASES.items())
    return f"one of {', '.join(KINDS)}; or an export format name: {aliases}"


DOCUMENT_KINDS: frozenset[str] = frozenset({"trajectory_suite", "atif"})
"""Kinds that are usually a whole JSON document (a ``.json`` file) rather than one JSONL row."""

RLAIF_PLACEHOLDERS: frozenset[str] = frozenset({"", "无"})
"""Final assistant contents that mark a MiniMind RLAIF/agentic prompt row (README: ``"无"``)."""


@dataclass(frozen=True)
class KindInfo:
    """What identifies a kind: the keys every row must have and a one-line description with its source."""

    name: str
    required: tuple[str, ...]
    """Top-level keys every row of this kind has (``trl.language_modeling``: ``text`` or ``messages``)."""
    description: str
    source: str


KIND_INFO: dict[str, KindInfo] = {
    k.name: k
    for k in (
        KindInfo(
            "trl.language_modeling",
            ("text|messages",),
            "Language modelling: {'text': str} or {'messages': [...], 'tools'?: [...]}",
            "TRL dataset_formats.md, 'Language modeling' and 'Tool Calling'",
        ),
        KindInfo(
            "trl.prompt_only",
            ("prompt",),
            "Prompt-only (GRPO/online methods): {'prompt': str | [messages]} plus any reward columns",
            "TRL dataset_formats.md, 'Prompt-only'",
        ),
        KindInfo(
            "trl.prompt_completion",
            ("prompt", "completion"),
            "Prompt-completion: prompt and completion both strings or both message lists",
            "TRL dataset_formats.md, 'Prompt-completion'",
        ),
        KindInfo(
            "trl.preference",
            ("chosen", "rejected"),
            "Preference (DPO): chosen/rejected with an explicit 'prompt' or an implicit shared prefix",
            "TRL dataset_formats.md, 'Preference'",
        ),
        KindInfo(
            "trl.unpaired_preference",
            ("prompt", "completion", "label"),
            "Unpaired preference (KTO): prompt, completion and a boolean label",
            "TRL dataset_formats.md, 'Unpaired preference'",
        ),
        KindInfo(
            "trl.stepwise_supervision",
            ("prompt", "completions", "labels"),
            "Stepwise supervision (PRM): prompt, completions[] and one boolean label per step",
            "TRL dataset_formats.md, 'Stepwise supervision'",
        ),
        KindInfo(
            "minimind.sft",
            ("conversations",),
            "MiniMind SFT: {'conversations': [...]}, tools and tool_calls as JSON strings",
            "MiniMind README (SFT data) and dataset/lm_dataset.py SFTDataset",
        ),
        KindInfo(
            "minimind.dpo",
            ("chosen", "rejected"),
            "MiniMind DPO: chosen/rejected message lists sharing the same prompt",
            "MiniMind README (DPO data) and dataset/lm_dataset.py DPODataset",
        ),
        KindInfo(
            "minimind.rlaif",
            ("conversations",),
            "MiniMind RLAIF: conversations ending in an assistant placeholder (dropped by the loader)",
            "MiniMind README (RLAIF data) and dataset/lm_dataset.py RLAIFDataset",
        ),
        KindInfo(
            "minimind.agentic",
            ("conversations", "gt"),
            "MiniMind agentic RL: conversations (ending in a placeholder) plus 'gt', a list of targets",
            "MiniMind README (agent_rl.jsonl) and dataset/lm_dataset.py AgentRLDataset",
        ),
        KindInfo(
            "openai.chat",
            ("messages",),
            "OpenAI chat fine-tuning: messages, optional tools/parallel_tool_calls, weight on assistant turns",
            "platform.openai.com/docs/guides/supervised-fine-tuning (see _openai_rules.py)",
        ),
        KindInfo(
            "trajectory_suite",
            ("tasks",),
            "Port Daddy trajectory suite: agent, rewardSpec, tasks[], trajectories[], unhooks[] (JSON)",
            "the project's suite model agent_rl_sandbox.schemas.reward.PortDaddySuite (DESIGN.md 'Task')",
        ),
        KindInfo(
            "atif",
            ("schema_version", "session_id", "agent", "steps"),
            "ATIF trajectory: schema_version, session_id, agent, steps[] with tool calls and observations",
            "harbor docs/rfcs/0001-trajectory-format.md and harbor/models/trajectories (v1.5)",
        ),
    )
}


def _messages_like(value: Any) -> bool:
    """True when ``value`` is a non-empty list whose first item is a dict with a ``role``."""
    return type(value) is list and len(value) > 0 and type(value[0]) is dict and "role" in value[0]


def _openai_signals(row: dict) -> bool:
    """True when a ``messages`` row carries something only OpenAI's format has.

    Signals: ``parallel_tool_calls`` or ``functions`` at top level, or a message with ``weight`` or
    ``function_call`` (OpenAI fine-tuning guide, 'Multi-turn chat examples' and function calling).
    """
    if "parallel_tool_calls" in row or "functions" in row:
        return True
    msgs = row.get("messages")
    if type(msgs) is list:
        for m in msgs:
            if type(m) is dict and ("weight" in m or "function_call" in m):
                return True
    return False


def _trl_signals(row: dict) -> bool:
    """True when a ``messages`` row has a tool call whose ``arguments`` is an object (TRL's documented form)."""
    msgs = row.get("messages")
    if type(msgs) is not list:
        return False
    for m in msgs:
        if type(m) is dict:
            calls = m.get("tool_calls")
            if type(calls) is list:
                for c in calls:
                    if type(c) is dict:
                        fn = c.get("function", c)
                        if type(fn) is dict and type(fn.get("arguments")) is dict:
                            return True
    return False


def _placeholder_final(convs: Any) -> bool:
    """True when the last message is an assistant turn whose content is an RLAIF placeholder."""
    if type(convs) is not list or not convs:
        return False
    last = convs[-1]
    if type(last) is not dict or last.get("role") != "assistant":
        return False
    content = last.get("content")
    return type(content) is str and content.strip() in RLAIF_PLACEHOLDERS and not last.get("tool_calls")


def candidate_kinds(row: Any) -> tuple[str, ...]:
    """Kinds whose identifying keys ``row`` has, best match first; ``()`` when none match.

    Shape: ``row`` is one parsed JSON value. Several candidates mean the row is ambiguous on its own
    (MiniMind DPO rows and TRL implicit-prompt conversational preference rows look the same; a plain
    ``messages`` row is both TRL language modelling and OpenAI chat); the validator then keeps the kind
    already established in the file, else the first candidate. Never raises.
    """
    if type(row) is not dict:
        return ()
    if "steps" in row and ("schema_version" in row or "session_id" in row):
        return ("atif",)
    if "tasks" in row and ("trajectories" in row or "rewardSpec" in row or "unhooks" in row or "agent" in row):
        return ("trajectory_suite",)
    if "conversations" in row:
        if "gt" in row:
            return ("minimind.agentic",)
        if _placeholder_final(row["conversations"]):
            return ("minimind.rlaif", "minimind.sft")
        return ("minimind.sft", "minimind.rlaif")
    if "chosen" in row and "rejected" in row:
        if "prompt" not in row and type(row["chosen"]) is list and type(row["rejected"]) is list:
            return ("trl.preference", "minimind.dpo")
        return ("trl.preference",)
    if "prompt" in row:
        if "completions" in row and "labels" in row:
            return ("trl.stepwise_supervision",)
        if "completion" in row and "label" in row:
            return ("trl.unpaired_preference",)
        if "completion" in row:
            return ("trl.prompt_completion",)
    if "messages" in row:
        if _openai_signals(row):
            return ("openai.chat",)
        if _trl_signals(row):
            return ("trl.language_modeling",)
        return ("trl.language_modeling", "openai.chat")
    if "text" in row:
        return ("trl.language_modeling",)
    if "prompt" in row:
        return ("trl.prompt_only",)
    if "tasks" in row:
        return ("trajectory_suite",)
    return ()


def has_required_keys(kind: str, row: dict) -> list[str]:
    """The required keys of ``kind`` that ``row`` lacks (``[]`` when it has them all).

    ``text|messages`` style entries need one of the alternatives. Raises ``KeyError`` for an unknown kind.
    """
    missing = []
    for key, alternatives in _REQUIRED[kind]:
        if not any(a in row for a in alternatives):
            missing.append(key)
    return missing


_REQUIRED: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    name: tuple((key, tuple(key.split("|"))) for key in info.required) for name, info in KIND_INFO.items()
}


def is_messages_like(value: Any) -> bool:
    """Public alias of the conversational test TRL uses (``is_conversational``: a list of role dicts)."""
    return _messages_like(value)

"""Training rows: read from the job's JSONL file, normalised for TRL, checked before any step.

**Reading** (:func:`read_rows`): one JSON object per non-blank line. The project's exports keep tool
calls' ``arguments`` as JSON strings (Arrow would otherwise merge every tool's argument keys and
null-fill them, STACK.md); Qwen2.5's template renders a string argument with ``tojson``, i.e.
double-encoded, so here each string that parses to a JSON object becomes that object again, and the
``datasets.Dataset`` is built with ``on_mixed_types="use_json"`` (:func:`to_dataset`), which keeps
each row's own keys. ``tools`` stays a JSON string (TRL's trainers ``json.loads`` it per row).
MiniMind rows (``conversations``) are refused: they are for MiniMind's own trainers.

**Preflight** (:func:`preflight`): renders rows with the tokenizer's chat template (for SFT the
generation-marked training variant TRL swaps in) and counts each row's tokens and trainable tokens:

- SFT conversational (``messages``), assistant-only loss: trainable = assistant tokens.
- SFT and KTO prompt-completion, DPO (``prompt`` + ``chosen``/``rejected``): trainable = the
  completion's tokens (full rendering minus the prompt rendering; the template is prefix-preserving).
- GRPO prompt-only: no trainable tokens in the data (the model writes them); the prompt must render
  and leave room for ``max_completion_length``.

A row is refused (:class:`PreflightError`, naming the 1-based line and the fix) when it has 0
trainable tokens, when every token is trainable (no prompt: the model would learn to write the
user's turn too), or when its prompt alone reaches ``max_length`` under completion-only loss (every
trainable token would be cut off). :class:`PreflightReport` (written as ``preflight.json``) holds the
first rows rendered and the per-row counts.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MESSAGE_FIELDS = ("messages", "prompt", "chosen", "rejected", "completion")
REQUIRED = {
    "sft": (("messages",), ("prompt", "completion"), ("text",)),
    "dpo": (("prompt", "chosen", "rejected"),),
    "kto": (("prompt", "completion", "label"),),
    "grpo": (("prompt",),),
    "agentic_grpo": (("prompt",),),
}
"""Column sets each trainer accepts (any one of them)."""
PREFLIGHT_ROWS = 2000
"""Rows counted by the preflight (all of a smaller file)."""
RENDERED_ROWS = 3
"""Rows whose rendering goes into the report."""


class DataError(ValueError):
    """The dataset cannot be read or does not fit the trainer; the message names the line."""


class PreflightError(DataError):
    """A row would train nothing, or everything, or nothing after truncation; names row and fix."""


@dataclass
class RowCount:
    line: int
    tokens: int
    trainable: int
    prompt_tokens: int


@dataclass
class PreflightReport:
    trainer: str
    rows: int
    checked: int
    loss: str
    """``assistant_only``, ``completion_only``, ``full`` or ``none`` (GRPO: the model writes the completion)."""
    max_length: int | None
    counts: list[RowCount] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)
    """The first rows as the chat template renders them (cut at 4000 characters each)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if not self.counts:
            return f"preflight: {self.checked} of {self.rows} rows, loss {self.loss}"
        trainable = [c.trainable for c in self.counts]
        return (
            f"preflight: {self.checked} of {self.rows} rows checked, loss {self.loss}, trainable tokens per row "
            f"min {min(trainable)} max {max(trainable)}, longest row {max(c.tokens for c in self.counts)} tokens"
        )


def _decode_arguments(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function") or {})
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        parsed = json.loads(args)
                    except ValueError:
                        parsed = None
                    if isinstance(parsed, dict):
                        fn["arguments"] = parsed
                calls.append({**c, "function": fn})
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def _read_verified(path: str | Path, sha256: str | None) -> str:
    """The file's text, read once without following a final symlink; when ``sha256`` is given the
    bytes read must hash to it (the approved content: a file swapped after validation is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DataError(f"cannot read dataset {path}: {exc}. Next step: check the job's dataset path") from exc
    if sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise DataError(
                f"dataset {path} changed since approval: sha256 {got} != approved {sha256}. "
                "Next step: request a new job for the new data"
            )
    return data.decode("utf-8", errors="replace")


def read_rows(path: str | Path, trainer: str, *, sha256: str | None = None) -> list[dict[str, Any]]:
    """The rows of a JSONL file, normalised (see the module docstring). Raises :class:`DataError`
    naming the line for unparseable JSON, a non-object, a MiniMind row, or columns the trainer
    does not take, and (``sha256`` given) when the content is not the approved one."""
    rows: list[dict[str, Any]] = []
    text = _read_verified(path, sha256)
    for lineno, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 is valid inside a JSON string
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DataError(f"{path}:{lineno}: not JSON ({exc}). Next step: validate the file") from exc
        if not isinstance(row, dict):
            raise DataError(f"{path}:{lineno}: not a JSON object. Next step: validate the file")
        if "conversations" in row:
            raise DataError(
                f"{path}:{lineno}: a MiniMind row (conversations); these trainers take TRL rows. "
                "Next step: export the sft, dpo, kto or grpo format"
            )
        if not any(all(k in row for k in cols) for cols in REQUIRED[trainer]):
            want = " or ".join("+".join(c) for c in REQUIRED[trainer])
            raise DataError(
                f"{path}:{lineno}: columns {sorted(row)} do not fit {trainer} (needs {want}). "
                f"Next step: export the {trainer.replace('agentic_', '')} format"
            )
        for k in MESSAGE_FIELDS:
            if k in row:
                row[k] = _decode_arguments(row[k])
        if isinstance(row.get("tools"), list):
            row["tools"] = json.dumps(row["tools"], ensure_ascii=False)
        row["_line"] = lineno
        rows.append(row)
    if not rows:
        raise DataError(f"dataset {path} has no rows. Next step: export some trajectories first")
    return rows


def prompts_from_conversations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GRPO prompt rows from conversational rows: each row's messages before its first assistant turn
    as ``prompt``, its other columns kept (``task_id``, ``behaviour``; not ``messages``); rows whose
    prompt has no user turn are dropped. Raises :class:`DataError` when none is left."""
    out = []
    for row in rows:
        messages = row.get("messages") or []
        cut = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
        prompt = messages[:cut]
        if any(m.get("role") == "user" for m in prompt):
            out.append({**{k: v for k, v in row.items() if k != "messages"}, "prompt": prompt})
    if not out:
        raise DataError("no row has a user turn before its first assistant turn. Next step: export the sft format")
    return out


def to_dataset(rows: list[dict[str, Any]]) -> Any:
    """A ``datasets.Dataset`` of ``rows`` (without the ``_line`` bookkeeping), each row keeping its
    own nested keys (``on_mixed_types="use_json"``)."""
    from datasets import Dataset

    clean = [{k: v for k, v in r.items() if k != "_line"} for r in rows]
    return Dataset.from_list(clean, on_mixed_types="use_json")


def _tools(row: dict[str, Any]) -> Any:
    tools = row.get("tools")
    tools = json.loads(tools) if isinstance(tools, str) else tools
    return tools or None


def _ids(tok: Any, messages: Any, tools: Any, *, gen: bool = False, template: str | None = None) -> list[int]:
    out = tok.apply_chat_template(
        messages, tools=tools, tokenize=True, return_dict=True, add_generation_prompt=gen, chat_template=template
    )
    return list(out["input_ids"])


def _text(tok: Any, messages: Any, tools: Any, template: str | None = None) -> str:
    return str(tok.apply_chat_template(messages, tools=tools, tokenize=False, chat_template=template))


def _refuse(trainer: str, line: int, what: str, fix: str) -> PreflightError:
    return PreflightError(f"preflight ({trainer}): row at line {line} {what}. Next step: {fix}")


def preflight(
    rows: list[dict[str, Any]],
    tok: Any,
    trainer: str,
    *,
    max_length: int | None,
    assistant_only_loss: bool = True,
    max_completion_length: int | None = None,
) -> PreflightReport:
    """Check ``rows`` with ``tok`` for ``trainer`` (see the module docstring). Returns the report;
    raises :class:`PreflightError` on the first refused row."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = tok.chat_template
    first = rows[0]
    conversational_sft = trainer == "sft" and "messages" in first
    if conversational_sft and assistant_only_loss and not has_generation_markers(template):
        template = get_training_chat_template(tok) or template
    if trainer in ("grpo", "agentic_grpo"):
        loss = "none"
    elif conversational_sft:
        loss = "assistant_only" if assistant_only_loss else "full"
    elif trainer == "sft" and "text" in first:
        loss = "full"
    else:
        loss = "completion_only"
    report = PreflightReport(trainer=trainer, rows=len(rows), checked=0, loss=loss, max_length=max_length)
    for i, row in enumerate(rows[:PREFLIGHT_ROWS]):
        line, tools = row["_line"], _tools(row)
        if trainer in ("grpo", "agentic_grpo"):
            prompt = row["prompt"]
            if isinstance(prompt, list):
                ids = _ids(tok, prompt, tools, gen=True)
                text = _text(tok, prompt, tools)
            else:
                ids, text = list(tok(str(prompt))["input_ids"]), str(prompt)
            if not ids:
                raise _refuse(trainer, line, "renders to an empty prompt", "give the row a user turn")
            count = RowCount(line=line, tokens=len(ids), trainable=0, prompt_tokens=len(ids))
        elif conversational_sft:
            out = tok.apply_chat_template(
                row["messages"], tools=tools, tokenize=True, return_dict=True,
                return_assistant_tokens_mask=assistant_only_loss, chat_template=template,
            )  # fmt: skip
            ids = list(out["input_ids"])
            mask = list(out["assistant_masks"]) if assistant_only_loss else [1] * len(ids)
            trainable = sum(mask)
            prompt_tokens = mask.index(1) if 1 in mask else len(ids)
            text = _text(tok, row["messages"], tools, template)
            count = RowCount(line=line, tokens=len(ids), trainable=trainable, prompt_tokens=prompt_tokens)
        elif "text" in row:
            ids, text = list(tok(str(row["text"]))["input_ids"]), str(row["text"])
            count = RowCount(line=line, tokens=len(ids), trainable=len(ids), prompt_tokens=0)
        else:
            completion = row["chosen"] if trainer == "dpo" else row["completion"]
            prompt = row["prompt"]
            if isinstance(prompt, list):
                p_ids = _ids(tok, prompt, tools, gen=True)
                full = _ids(tok, prompt + completion, tools)
                text = _text(tok, prompt + completion, tools)
            else:
                p_ids = list(tok(str(prompt))["input_ids"])
                full = list(tok(str(prompt) + str(completion))["input_ids"])
                text = str(prompt) + str(completion)
            count = RowCount(
                line=line, tokens=len(full), trainable=max(0, len(full) - len(p_ids)), prompt_tokens=len(p_ids)
            )
            if trainer == "dpo":
                r_full = _ids(tok, prompt + row["rejected"], tools) if isinstance(prompt, list) else full
                if len(r_full) <= len(p_ids):
                    raise _refuse(
                        trainer, line, "has an empty rejected completion", "drop the pair or fix its rejected turn"
                    )
        _check(trainer, count, loss, max_length)
        if trainer in ("grpo", "agentic_grpo") and max_length and max_completion_length:
            if count.prompt_tokens + max_completion_length > max_length:
                raise _refuse(
                    trainer,
                    line,
                    f"has a {count.prompt_tokens}-token prompt: with max_completion_length {max_completion_length} "
                    f"it exceeds max_length {max_length}",
                    "shorten the prompt (fewer or shorter tool schemas) or raise max_length",
                )
        report.counts.append(count)
        if i < RENDERED_ROWS:
            report.rendered.append(text[:4000])
        report.checked += 1
    return report


def _check(trainer: str, c: RowCount, loss: str, max_length: int | None) -> None:
    if loss == "none":
        return
    if c.trainable == 0:
        fix = (
            "add the assistant's turn (or drop the row); rows without an assistant turn train nothing"
            if loss == "assistant_only"
            else "give the row a non-empty completion (or drop it)"
        )
        raise _refuse(trainer, c.line, "has 0 trainable tokens", fix)
    if loss in ("assistant_only", "completion_only") and c.trainable >= c.tokens:
        raise _refuse(
            trainer,
            c.line,
            f"is 100% trainable ({c.tokens} tokens, no prompt)",
            "give it a user turn before the assistant's, so the model learns to answer rather than to write prompts",
        )
    if max_length is not None and loss in ("assistant_only", "completion_only") and c.prompt_tokens >= max_length:
        raise _refuse(
            trainer,
            c.line,
            f"has a {c.prompt_tokens}-token prompt that alone fills max_length {max_length} (every trainable token "
            "would be truncated)",
            f"raise max_length above {c.prompt_tokens} (spec.hyperparameters.max_length) or shorten the prompt",
        )

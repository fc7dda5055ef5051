"""A local transformers model as the policy agent's :class:`~agent_rl_sandbox.agents.policy.PolicyModel`:
the base model, or the base with a PEFT adapter, on CPU or a GPU.

The prompt is the tokenizer's chat template over the messages and tool declarations
(``apply_chat_template(..., add_generation_prompt=True)``); the completion is parsed with TRL's
:func:`trl.chat_template_utils.parse_response` (the response schema TRL sets for its known
templates, :func:`~trl.chat_template_utils.add_response_schema`). A completion whose tool-call block
does not parse falls back to text there; the project's parser then names what was wrong, and the
episode records it as an error observation.

The kill switch's fallback is :meth:`TransformersPolicy.base_only`: PEFT's ``disable_adapter()``
context, the same weights without the adapter, with no reload.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_rl_sandbox.agents.policy import AssistantTurn, ToolCall, turn_from_text


def _arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            val = json.loads(raw)
        except (ValueError, RecursionError):
            return None, "arguments are not valid JSON"
        return (val, None) if isinstance(val, dict) else (None, f"arguments are a JSON {type(val).__name__}")
    return None, f"arguments are a {type(raw).__name__}, expected an object"


class TransformersPolicy:
    """``model_dir`` (a local causal LM with a TRL-recognised chat template), with ``adapter_dir``
    (a PEFT LoRA adapter) on top when given.

    ``temperature`` 0 decodes greedily; ``seed`` seeds sampling. Raises ``ValueError`` when the
    tokenizer's chat template is not one TRL can parse responses for."""

    def __init__(
        self,
        model_dir: str | Path,
        adapter_dir: str | Path | None = None,
        *,
        temperature: float = 0.0,
        seed: int = 0,
        name: str | None = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl.chat_template_utils import add_response_schema

        tok = AutoTokenizer.from_pretrained(str(model_dir))
        if getattr(tok, "response_template", None) is None and getattr(tok, "response_schema", None) is None:
            tok = add_response_schema(tok)
        model = AutoModelForCausalLM.from_pretrained(str(model_dir))
        self.has_adapter = adapter_dir is not None
        if adapter_dir is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(adapter_dir))
        model.eval()
        self.model, self.tokenizer = model, tok
        self.name = name or (str(adapter_dir) if adapter_dir is not None else str(model_dir))
        self._temperature = temperature
        self._gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        self._base_only = False

    @contextlib.contextmanager
    def base_only(self) -> Iterator[TransformersPolicy]:
        """Answer with the base model inside this block (PEFT ``disable_adapter()``; a no-op
        without an adapter): the fallback the kill switch routes to."""
        if not self.has_adapter:
            yield self
            return
        with self.model.disable_adapter():
            yield self

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        """The chat-template token ids of ``messages`` + the generation prompt."""
        ids = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)

    def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_new_tokens: int
    ) -> AssistantTurn:
        import torch
        from trl.chat_template_utils import parse_response

        prompt = self.prompt_ids(messages, tools)
        limit = int(getattr(self.model.config, "max_position_embeddings", 2048))
        room = max(1, min(max_new_tokens, limit - len(prompt)))
        if len(prompt) >= limit:
            return AssistantTurn(text="(context full)", completion_tokens=0)
        kwargs: dict[str, Any] = {
            "max_new_tokens": room,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
        }
        if self._temperature > 0:
            kwargs.update(do_sample=True, temperature=self._temperature)
        else:
            kwargs.update(do_sample=False)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), **kwargs
            )
        completion = out[0, len(prompt) :].tolist()
        parsed = parse_response(self.tokenizer, completion, prefix=prompt, tools=tools or None)
        content = parsed.get("content") or ""
        calls = parsed.get("tool_calls") or []
        if not calls:
            # TRL fell back to text (a malformed block) or there was no call: the project's parser
            # turns any well-formed block left in the text into a call and names what was wrong with the rest
            return turn_from_text(content, len(completion))
        tool_calls = []
        for c in calls:
            fn = c.get("function") or {}
            args, err = _arguments(fn.get("arguments"))
            tool_calls.append(ToolCall(str(fn.get("name") or ""), args, err, raw=json.dumps(fn, default=str)[:500]))
        return AssistantTurn(text=content.strip(), tool_calls=tool_calls, completion_tokens=len(completion))


def scale_embeddings(model_dir: str | Path, factor: float) -> None:
    """Multiply the token embeddings of the model in ``model_dir`` (tied to its output layer in the
    tiny model, so the logits scale too) by ``factor`` and save it in place, recording the factor
    in ``embedding_scale.json``. ``demo --train`` uses it on the tiny model (see ``cli/_train_demo.py``)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(factor)
    model.save_pretrained(str(model_dir))
    Path(model_dir, "embedding_scale.json").write_text(json.dumps({"embedding_scale": factor}) + "\n", encoding="utf-8")

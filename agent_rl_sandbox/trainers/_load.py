"""Loading a base model with or without a trained adapter, for generation and evaluation.

:func:`load_model` returns ``(model, tokenizer)``: the base in float32 (CPU) in eval mode, wrapped
in a PEFT model when ``adapter`` names an adapter folder (``adapter_config.json`` +
``adapter_model.safetensors``, as the train stage saves it). The tokenizer is the base's, with
TRL's response schema set when TRL knows the chat template, so
``trl.chat_template_utils.parse_response(tokenizer, completion_ids, prefix=prompt_ids)`` parses tool
calls (and falls back to text on a malformed one). With an adapter, ``with model.disable_adapter():``
gives the base model's outputs (the kill-switch fallback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_model(base: str | Path, adapter: str | Path | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of ``base`` (+ ``adapter``); see the module docstring. Raises
    ``FileNotFoundError`` when ``adapter`` has no ``adapter_config.json``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import add_response_schema

    tok = AutoTokenizer.from_pretrained(base)
    try:
        add_response_schema(tok)
    except ValueError:  # a template TRL does not know: tool calls stay text
        pass
    model = AutoModelForCausalLM.from_pretrained(base)
    if adapter is not None:
        if not (Path(adapter) / "adapter_config.json").is_file():
            raise FileNotFoundError(
                f"{adapter} holds no adapter_config.json. Next step: point at the job's adapter/ folder"
            )
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter))
    model.eval()
    return model, tok

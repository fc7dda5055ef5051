"""The size and shape of a model in a local folder, for the route's memory estimate.

:func:`local_model_signals` reads only headers, never weights:

- ``*.safetensors`` (every shard at the folder's top level): the file starts with an unsigned 64-bit
  little-endian header length and that many bytes of JSON mapping each tensor's name to its
  ``dtype``, ``shape`` and ``data_offsets`` (plus an optional ``__metadata__``): the parameter count
  is the sum over tensors of the product of their shapes (format:
  https://huggingface.co/docs/safetensors/index, "Format").
- ``config.json`` (transformers' ``PretrainedConfig``): the transformer shape (``num_hidden_layers``,
  ``hidden_size``, ``num_attention_heads``, ``intermediate_size``, ``vocab_size``; GPT-2's ``n_layer``,
  ``n_embd``, ``n_head``, ``n_inner`` too). Without a readable safetensors header the parameter count is
  estimated from it for a Llama/Qwen-style decoder (:func:`params_from_config`).

Nothing here raises on file content: an unreadable or malformed file is skipped and the next source
is tried; a folder that tells nothing gives ``None``.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_HEADER_BYTES = 100 * 1024 * 1024
"""The largest safetensors header read (the format's own limit is 100 MB)."""
MAX_CONFIG_BYTES = 1024 * 1024
_SHAPE_KEYS: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_heads": ("num_attention_heads", "n_head"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim"),
    "vocab_size": ("vocab_size",),
}


@dataclass
class LocalModel:
    """What a local model folder says. ``params``: the parameter count (``None``: unknown);
    ``signals``: ``RouteSignals`` field -> value (``base_model_params`` with a unit, shape fields);
    ``source``: where the count came from, for the route's reasons."""

    params: int | None = None
    signals: dict[str, Any] = field(default_factory=dict)
    source: str = ""


def safetensors_params(path: Path) -> int | None:
    """The parameter count in one safetensors file's header; ``None`` when the file is unreadable or
    its header is not a safetensors header (too short, too long, not JSON, a shape that is not a list
    of non-negative integers)."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) != 8:
                return None
            (n,) = struct.unpack("<Q", head)
            if n == 0 or n > MAX_HEADER_BYTES:
                return None
            raw = f.read(n)
        if len(raw) != n:
            return None
        header = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    total = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape") if isinstance(info, dict) else None
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            return None
        total += math.prod(shape)
    return total


def _config(folder: Path) -> dict[str, Any] | None:
    try:
        with (folder / "config.json").open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            return None
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("text_config"), dict):  # a multimodal config: the language model's part
        doc = {**doc["text_config"], **{k: v for k, v in doc.items() if k == "tie_word_embeddings"}}
    return doc


def _shape(config: dict[str, Any]) -> dict[str, int]:
    out = {}
    for signal, keys in _SHAPE_KEYS.items():
        value = next((config[k] for k in keys if type(config.get(k)) is int and config[k] > 0), None)
        if value is not None:
            out[signal] = value
    return out


def params_from_config(config: dict[str, Any]) -> int | None:
    """An estimate of a Llama/Qwen-style decoder's parameter count from its ``config.json``: token
    embeddings (and an untied output head), per layer attention with grouped KV heads (q and o
    ``hidden x heads*head_dim``, k and v ``hidden x kv_heads*head_dim``), a gated MLP (three
    ``hidden x intermediate`` matrices) and two norms, and the final norm. Biases are not counted.
    ``None`` when a shape field is missing."""
    shape = _shape(config)
    if not {"num_layers", "hidden_size", "num_heads", "vocab_size"} <= shape.keys():
        return None
    h, layers, heads, vocab = shape["hidden_size"], shape["num_layers"], shape["num_heads"], shape["vocab_size"]
    inter = shape.get("intermediate_size", 4 * h)
    kv = config.get("num_key_value_heads")
    kv = kv if type(kv) is int and kv > 0 else heads
    head_dim = config.get("head_dim")
    head_dim = head_dim if type(head_dim) is int and head_dim > 0 else h // heads
    attention = 2 * h * heads * head_dim + 2 * h * kv * head_dim
    per_layer = attention + 3 * h * inter + 2 * h
    tied = config.get("tie_word_embeddings", True) is not False
    return vocab * h * (1 if tied else 2) + layers * per_layer + h


def with_unit(params: int) -> str:
    """``params`` as ``RouteSignals.base_model_params`` text: millions with six decimals (exact to
    the parameter), e.g. ``494032768`` -> ``"494.032768M"``."""
    return f"{params / 10**6:.6f}".rstrip("0").rstrip(".") + "M"


def local_model_signals(folder: str | Path) -> LocalModel | None:
    """The size (and shape) of the model in ``folder``, from its safetensors headers, else estimated
    from its ``config.json``; ``None`` when ``folder`` is not a folder or tells neither."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    config = _config(folder)
    shape = _shape(config) if config is not None else {}
    shards = sorted(folder.glob("*.safetensors"))
    counts = [safetensors_params(p) for p in shards]
    params: int | None
    if shards and all(c is not None for c in counts):
        params = sum(c for c in counts if c is not None)
        what = f"{shards[0].name} header" if len(shards) == 1 else f"headers of {len(shards)} *.safetensors shards"
        source = f"local model folder {folder}: {what}"
    else:
        params = params_from_config(config) if config is not None else None
        source = f"local model folder {folder}: estimated from config.json"
    if not params:
        return LocalModel(signals=shape, source=f"local model folder {folder}: config.json") if shape else None
    return LocalModel(params=params, signals={"base_model_params": with_unit(params), **shape}, source=source)

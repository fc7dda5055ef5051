"""A tiny Qwen2-style causal LM built locally, with no hub: the base model of every CPU test, demo
and benchmark.

:func:`build_tiny_model` writes a folder that ``AutoModelForCausalLM`` / ``AutoTokenizer`` load:

- **Tokenizer**: byte-level BPE trained here with ``tokenizers`` on text the project generates
  (:mod:`._corpus`: sandbox tool schemas, tool calls, tool responses, instructions, the task
  folders' ``instruction.md``) rendered through the chat template. Its pipeline is exactly the one
  transformers 5's ``Qwen2Tokenizer`` rebuilds on load (NFC, Qwen's split regex, byte level), so the
  saved ids survive the reload (pitfall in STACK.md). Initial alphabet: all 256 bytes, so any text
  encodes. Specials: eos ``<|im_end|>``, pad ``<|endoftext|>`` (pad != eos), no BOS; ``<tool_call>``,
  ``</tool_call>``, ``<tool_response>``, ``</tool_response>`` are single added tokens.
- **Chat template**: TRL's bundled Qwen2.5 template (``trl/chat_templates/qwen2_5.jinja`` of the
  installed TRL, read at build time; no template text lives in this repository). TRL recognises it
  byte for byte, so ``supports_tool_calling``, ``is_chat_template_prefix_preserving``,
  ``add_response_schema`` (tool-call parsing) and ``get_training_chat_template`` (the
  ``{% generation %}`` variant SFT swaps in for assistant-only loss) all work.
- **Model**: ``Qwen2ForCausalLM`` from a config (default 2 layers, hidden 64, 4 heads, 2 KV heads,
  MLP 128, tied embeddings, 2048 positions), seeded weights, float32; ``generation_config`` stops at
  ``<|im_end|>`` or ``<|endoftext|>``.
- ``tiny_model.json``: what was built (sizes, seed, template source, TRL version, corpus hash) and
  the self-check's results.

After saving, :func:`self_check` reloads the folder with the Auto classes and raises
:class:`TinyModelError` unless token ids survive the round trip, the template is recognised for
tool calling and prefix-preserving, and a rendered tool call parses back through
``tokenizer.parse_response`` into the same name and arguments.

:func:`load_tiny_model` loads model and tokenizer, with the response schema set, ready for
generation and ``parse_response``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.trainers._corpus import corpus_conversations, sandbox_tool_schemas, task_instructions

log = logging.getLogger(__name__)

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = (PAD_TOKEN, "<|im_start|>", EOS_TOKEN)
"""Trained as special tokens, in this order (ids 0, 1, 2)."""
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
"""Added (not special) tokens: the tool-call scaffolding is one token each, as in Qwen2.5's tokenizer."""
CHAT_TEMPLATE_NAME = "qwen2_5"
"""Which of TRL's bundled templates the tokenizer carries."""

# Qwen2's pre-tokenizer split (transformers' Qwen2Tokenizer.PRETOKENIZE_REGEX, read from there when
# available so the two can never drift).
_QWEN_SPLIT_FALLBACK = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


class TinyModelError(RuntimeError):
    """Building or checking the tiny model failed; the message says which check and what to do."""


@dataclass(frozen=True)
class TinyModelInfo:
    """What :func:`build_tiny_model` built (also written to ``tiny_model.json``)."""

    path: str
    layers: int
    hidden: int
    vocab_size: int
    """Tokens in the tokenizer (trained BPE plus added tokens); the model's embedding rows."""
    parameters: int
    seed: int
    chat_template: str
    """``trl:qwen2_5``: TRL's bundled template of that name."""
    trl_version: str
    corpus_sha256: str
    """SHA-256 of the tokenizer's training text (same seed, same text)."""
    eos_token: str = EOS_TOKEN
    pad_token: str = PAD_TOKEN
    checks: dict[str, bool] = field(default_factory=dict)


def chat_template_text() -> str:
    """TRL's bundled Qwen2.5 chat template, read from the installed TRL package."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def _split_regex() -> str:
    try:
        from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

        return str(PRETOKENIZE_REGEX)
    except ImportError:  # pragma: no cover - moved in a later transformers
        return _QWEN_SPLIT_FALLBACK


def _qwen_pipeline(tok: Any) -> None:
    from tokenizers import Regex, decoders, normalizers, pre_tokenizers

    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_split_regex()), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()


def _wrap(tok: Any, template: str) -> Any:
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN, unk_token=None, bos_token=None
    )
    fast.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    fast.chat_template = template
    fast.model_max_length = 2048
    return fast


def corpus_text(template: str, seed: int = 0) -> list[str]:
    """The tokenizer's training text: the generated conversations rendered with ``template``, plus
    the task instructions. Deterministic for a given ``seed`` and installed TRL template."""
    from tokenizers import Tokenizer
    from tokenizers.models import BPE

    renderer = Tokenizer(BPE())
    _qwen_pipeline(renderer)
    renderer.add_special_tokens(list(SPECIAL_TOKENS))
    fast = _wrap(renderer, template)
    texts = []
    for conv in corpus_conversations(seed=seed):
        texts.append(fast.apply_chat_template(conv["messages"], tools=conv["tools"], tokenize=False))
    texts.extend(task_instructions())
    return texts


def _train_tokenizer(texts: list[str], vocab: int, template: str) -> Any:
    from tokenizers import Tokenizer, pre_tokenizers, trainers
    from tokenizers.models import BPE

    tok = Tokenizer(
        BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False, byte_fallback=False)
    )
    _qwen_pipeline(tok)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return _wrap(tok, template)


def build_tiny_model(
    path: str | Path,
    *,
    layers: int = 2,
    hidden: int = 64,
    vocab: int = 1024,
    heads: int = 4,
    seed: int = 0,
    check: bool = True,
) -> TinyModelInfo:
    """Build, save and (``check``) self-check the tiny model in ``path`` (created; existing files of
    the same names are overwritten). See the module docstring for what is built.

    ``vocab`` is the BPE's target size (at least 256 bytes + 3 specials = 259; the trainer stops
    earlier when the corpus has no more pairs seen twice); ``hidden`` must be divisible by ``heads``.
    Takes about 1 s plus imports on a CPU. Raises ``ValueError`` for impossible sizes and
    :class:`TinyModelError` when a self-check fails."""
    if layers < 1 or hidden < 8 or vocab < 259 or heads < 1 or hidden % heads:
        raise ValueError(
            f"impossible tiny model: layers={layers} hidden={hidden} heads={heads} vocab={vocab}. Next step: "
            "use layers >= 1, vocab >= 259, hidden >= 8 and divisible by heads (default 4)"
        )
    import torch
    import trl
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    template = chat_template_text()
    texts = corpus_text(template, seed=seed)
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()
    tokenizer = _train_tokenizer(texts, vocab, template)
    eos_id, pad_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN), tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    kv_heads = 2 if heads % 2 == 0 else 1
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        use_cache=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=[eos_id, pad_id], pad_token_id=pad_id, bos_token_id=None, max_new_tokens=64
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    info = TinyModelInfo(
        path=str(out),
        layers=layers,
        hidden=hidden,
        vocab_size=len(tokenizer),
        parameters=sum(p.numel() for p in model.parameters()),
        seed=seed,
        chat_template=f"trl:{CHAT_TEMPLATE_NAME}",
        trl_version=trl.__version__,
        corpus_sha256=digest,
    )
    if check:
        info = TinyModelInfo(**{**asdict(info), "checks": self_check(out, reference=tokenizer)})
    (out / "tiny_model.json").write_text(json.dumps(asdict(info), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    log.info("tiny model: %s (%d parameters, vocab %d)", out, info.parameters, info.vocab_size)
    return info


_PROBE = 'Fix src/app.py: 12 tests, 3 failed; "café" naïve — ok? <tool_call>\n{"name": "x"}\n</tool_call>'


def self_check(path: str | Path, reference: Any | None = None) -> dict[str, bool]:
    """Reload ``path`` with the Auto classes and check it is usable for TRL tool-calling training.
    Returns the checks that passed by name; raises :class:`TinyModelError` naming the first failure.

    ``reference``: the tokenizer before saving; when given, ids of a probe text (digits, accents,
    tool tokens) and of a rendered tool-calling conversation must be equal after the reload."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import (
        add_response_schema,
        is_chat_template_prefix_preserving,
        supports_tool_calling,
    )

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    checks: dict[str, bool] = {}

    def need(name: str, ok: bool, fix: str) -> None:
        checks[name] = ok
        if not ok:
            raise TinyModelError(f"tiny model {path}: check {name} failed. Next step: {fix}")

    need("pad_differs_from_eos", tok.pad_token_id != tok.eos_token_id and tok.eos_token == EOS_TOKEN, "rebuild")
    need("embeddings_cover_vocab", model.get_input_embeddings().num_embeddings >= len(tok), "rebuild")
    conv = corpus_conversations(n=1, seed=7)[0]
    tool_msgs = [
        {"role": "user", "content": "Run the tests."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "sandbox_exec", "arguments": {"command": "ls"}}}],
        },
    ]
    if reference is not None:
        same = reference(_PROBE)["input_ids"] == tok(_PROBE)["input_ids"]
        rendered = reference.apply_chat_template(conv["messages"], tools=conv["tools"], tokenize=False)
        same = same and reference(rendered)["input_ids"] == tok(rendered)["input_ids"]
        need(
            "ids_survive_reload",
            same,
            "the saved pre-tokenizer is not what transformers rebuilds on load; keep the Qwen2 pipeline",
        )
    need("template_is_trl_qwen2_5", tok.chat_template == chat_template_text(), "rebuild with the installed TRL")
    need("supports_tool_calling", supports_tool_calling(tok), "use a template TRL recognises")
    need("prefix_preserving", is_chat_template_prefix_preserving(tok), "use a template TRL recognises")
    add_response_schema(tok)
    prefix = tok.apply_chat_template(
        tool_msgs[:1], tools=sandbox_tool_schemas(), tokenize=False, add_generation_prompt=True
    )
    full = tok.apply_chat_template(tool_msgs, tools=sandbox_tool_schemas(), tokenize=False)
    need("prompt_is_prefix", full.startswith(prefix), "use a prefix-preserving template")
    ids = tok(full[len(prefix) :])["input_ids"]
    parsed = tok.parse_response(ids, prefix=tok(prefix)["input_ids"])
    calls = parsed.get("tool_calls") or []
    need(
        "tool_call_parses_back",
        len(calls) == 1 and calls[0]["function"] == tool_msgs[1]["tool_calls"][0]["function"],
        f"parse_response gave {parsed!r}; check the response schema",
    )
    return checks


def load_tiny_model(path: str | Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from ``path`` (float32, eval mode); the tokenizer has TRL's response
    schema set, so ``tokenizer.parse_response(completion_ids, prefix=prompt_ids)`` returns
    ``{"role": "assistant", "content"?, "tool_calls"?}`` (it raises ``ValueError`` on a malformed
    tool call)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import add_response_schema

    tok = add_response_schema(AutoTokenizer.from_pretrained(path))
    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return model, tok

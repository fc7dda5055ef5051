"""Training-memory estimator: full fine-tuning vs LoRA vs 4-bit QLoRA, from a model's shape.

All figures are bytes of accelerator memory for one device holding the whole model (no sharding),
reported in GiB (2**30 bytes). The formula, term by term:

- **Trained parameters with mixed-precision AdamW: 16 bytes each**: bf16 weights (2) + bf16
  gradients (2) + fp32 master weights, momentum and variance (4 + 4 + 4). Rajbhandari et al. 2020,
  "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", section 3.1 (the "16
  bytes per parameter" of mixed-precision Adam). transformers' "model memory anatomy" page counts
  the same terms as 18 (it keeps fp32 gradients); we follow ZeRO, as the issue asks.
- **Frozen base in bf16: 2 bytes per parameter** (LoRA keeps the base frozen in 16 bits).
- **Frozen base in NF4 (QLoRA): 0.5 bytes per parameter plus quantisation constants**: one fp32
  absmax per block of 64 weights is 0.5 bits per parameter; double quantisation cuts it to 0.127
  bits (Dettmers et al. 2023, "QLoRA", section 3). So 0.5 + 0.127 / 8 bytes per parameter.
- **LoRA parameters** on every linear layer ("all-linear", as TRL's "LoRA Without Regret" guide
  recommends): a rank-r adapter on a d_in x d_out matrix has r * (d_in + d_out) parameters. Per
  transformer block: q, k, v, o (h x h each, ignoring grouped-query attention's smaller k/v) and
  the gated MLP's gate, up (h x i) and down (i x h). They train in mixed precision: 16 bytes each.
- **Activations** per transformer block, 16-bit, no tensor/sequence parallelism: s * b * h * (34 +
  5 * a * s / h) bytes (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", equation 1). With a fused attention kernel (FlashAttention, PyTorch SDPA) the
  a * s * s score matrices are never stored, leaving 34 * s * b * h; with full activation
  checkpointing only each block's input is kept, 2 * s * b * h, plus one block's full activations
  while it is recomputed. Activations are the same for full, LoRA and QLoRA (the backward pass still
  goes through the frozen base).
- **Logits**: s * b * vocab * 4 bytes (fp32 logits for the loss), when the vocabulary size is known.

A configuration "fits" when its total is at most :data:`USABLE_FRACTION` of the device memory (the
rest is the CUDA context, the allocator's fragmentation and temporary buffers: a project rule of
thumb, not from a paper).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GIB = 2**30
TRAINED_BYTES = 16
"""Mixed-precision AdamW bytes per trained parameter (ZeRO, section 3.1)."""
FROZEN_BF16_BYTES = 2
NF4_BYTES = 0.5 + 0.127 / 8
"""NF4 weights plus double-quantised constants (QLoRA, section 3)."""
USABLE_FRACTION = 0.9
MLP_RATIO = 2.6875
"""Intermediate size / hidden size when not given (Llama-style gated MLP: 11008 / 4096)."""

Method = Literal["full", "lora", "qlora"]


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs to know of a model. ``params``: total parameter count;
    ``layers``, ``hidden``, ``heads``, ``intermediate``: transformer shape; ``vocab``: vocabulary
    size (0 = unknown, logits not counted)."""

    params: int
    layers: int
    hidden: int
    heads: int
    intermediate: int
    vocab: int = 0


# Shapes of well-known open models, used to fill a shape from a parameter count alone (the nearest
# entry by parameter count). Sources: the models' published config.json files.
KNOWN_SHAPES: tuple[tuple[str, ModelShape], ...] = (
    ("Qwen2.5-0.5B", ModelShape(494_000_000, 24, 896, 14, 4864, 151_936)),
    ("Qwen2.5-1.5B", ModelShape(1_540_000_000, 28, 1536, 12, 8960, 151_936)),
    ("Qwen2.5-3B", ModelShape(3_090_000_000, 36, 2048, 16, 11008, 151_936)),
    ("Llama-2-7B", ModelShape(6_740_000_000, 32, 4096, 32, 11008, 32_000)),
    ("Llama-2-13B", ModelShape(13_000_000_000, 40, 5120, 40, 13824, 32_000)),
    ("Qwen2.5-32B", ModelShape(32_800_000_000, 64, 5120, 40, 27648, 152_064)),
    ("Llama-2-70B", ModelShape(69_000_000_000, 80, 8192, 64, 28672, 32_000)),
)


def nearest_shape(params: int) -> tuple[str, ModelShape]:
    """The known model whose parameter count is nearest to ``params`` (by ratio), scaled to
    ``params``: ``(name, shape)``."""
    name, shape = min(KNOWN_SHAPES, key=lambda kv: abs((kv[1].params / params) - 1) if params else 0)
    return name, ModelShape(params, shape.layers, shape.hidden, shape.heads, shape.intermediate, shape.vocab)


def lora_params(shape: ModelShape, rank: int) -> int:
    """Trainable parameters of a rank-``rank`` LoRA on every linear layer of every block."""
    h, i = shape.hidden, shape.intermediate
    per_block = rank * (4 * (h + h) + 2 * (h + i) + (i + h))
    return per_block * shape.layers


def activation_bytes(
    shape: ModelShape, seq_len: int, batch: int, *, fused_attention: bool = True, checkpointing: bool = False
) -> int:
    """Activation memory of one forward pass kept for backward (Korthikanti et al. 2022, eq. 1)."""
    s, b, h, a = seq_len, batch, shape.hidden, shape.heads
    full_block = s * b * h * 34 + (0 if fused_attention else 5 * a * s * s * b)
    if checkpointing:
        return 2 * s * b * h * shape.layers + full_block
    return full_block * shape.layers


@dataclass(frozen=True)
class MemoryEstimate:
    """One method's estimate, in GiB (rounded to 0.01). ``fits`` is ``None`` when no device memory
    was given."""

    method: Method
    trainable_params: int
    weights_gib: float
    gradients_and_optimizer_gib: float
    activations_gib: float
    logits_gib: float
    total_gib: float
    fits: bool | None


def estimate(
    method: Method,
    shape: ModelShape,
    *,
    seq_len: int,
    batch: int = 1,
    rank: int = 16,
    device_gib: float | None = None,
    fused_attention: bool = True,
    checkpointing: bool = False,
) -> MemoryEstimate:
    """Training memory of ``method`` on ``shape`` for ``batch`` sequences of ``seq_len`` tokens.

    Raises ``ValueError`` on a non-positive size."""
    if min(shape.params, shape.layers, shape.hidden, seq_len, batch) <= 0 or (method != "full" and rank <= 0):
        raise ValueError("params, layers, hidden, seq_len, batch and rank must be positive")
    act = activation_bytes(shape, seq_len, batch, fused_attention=fused_attention, checkpointing=checkpointing)
    logits = seq_len * batch * shape.vocab * 4
    weights: float
    if method == "full":
        trainable = shape.params
        weights = 2 * shape.params  # the bf16 copy; the fp32 master is counted with the optimizer
        rest = (TRAINED_BYTES - 2) * shape.params
    else:
        trainable = lora_params(shape, rank)
        base = FROZEN_BF16_BYTES if method == "lora" else NF4_BYTES
        weights = base * shape.params + 2 * trainable
        rest = (TRAINED_BYTES - 2) * trainable
    total = weights + rest + act + logits
    fits = None if device_gib is None else total <= USABLE_FRACTION * device_gib * GIB
    return MemoryEstimate(
        method=method,
        trainable_params=trainable,
        weights_gib=round(weights / GIB, 2),
        gradients_and_optimizer_gib=round(rest / GIB, 2),
        activations_gib=round(act / GIB, 2),
        logits_gib=round(logits / GIB, 2),
        total_gib=round(total / GIB, 2),
        fits=fits,
    )

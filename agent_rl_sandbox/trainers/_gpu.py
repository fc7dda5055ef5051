"""The CUDA-only paths, as configuration: QLoRA (4-bit NF4 base through bitsandbytes) and vLLM
generation for GRPO. Both are built and tested everywhere; only running them needs a CUDA GPU.

- :func:`qlora_quantization_kwargs` gives the ``BitsAndBytesConfig`` arguments (NF4, double
  quantisation, bf16 compute) and :func:`qlora_model_kwargs` the ``from_pretrained`` keyword
  arguments that use them; :func:`require_cuda` refuses on a host without CUDA with
  ``"QLoRA needs a CUDA GPU; use lora on this machine"`` (STACK.md: 4-bit on CPU breaks GRPO's
  generate-then-backward order, so it is not offered there).
- :func:`vllm_grpo_kwargs` gives the ``GRPOConfig`` fields for vLLM generation (``server`` mode: a
  separate ``trl vllm-serve`` process; ``colocate``: inside the trainer) and
  :func:`vllm_serve_command` the server's command line. On a host without CUDA:
  ``"vLLM generation needs a CUDA GPU; set use_vllm false on this machine"``.

:func:`cuda_available` imports torch only when asked, so building the configurations stays light.
"""

from __future__ import annotations

from typing import Any

QLORA_ON_CPU = "QLoRA needs a CUDA GPU; use lora on this machine"
VLLM_ON_CPU = "vLLM generation needs a CUDA GPU; set use_vllm false on this machine"


class NeedsGpuError(RuntimeError):
    """A CUDA-only path was requested on a host without CUDA."""


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (False when torch is missing)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def require_cuda(message: str, *, cuda: bool | None = None) -> None:
    """Raise :class:`NeedsGpuError` with ``message`` unless CUDA is available (``cuda`` overrides
    the probe, for tests and dry runs)."""
    if not (cuda_available() if cuda is None else cuda):
        raise NeedsGpuError(message)


def qlora_quantization_kwargs() -> dict[str, Any]:
    """Arguments of ``transformers.BitsAndBytesConfig`` for QLoRA (the QLoRA paper's NF4 recipe);
    ``bnb_4bit_compute_dtype`` is the name ``"bfloat16"`` (transformers accepts the string)."""
    return {
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "bfloat16",
        "bnb_4bit_quant_storage": "bfloat16",
    }


def qlora_model_kwargs(*, cuda: bool | None = None) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments for a QLoRA base: the quantisation config and bf16
    weights. Raises :class:`NeedsGpuError` (``QLORA_ON_CPU``) without CUDA; imports transformers."""
    require_cuda(QLORA_ON_CPU, cuda=cuda)
    from transformers import BitsAndBytesConfig

    return {"quantization_config": BitsAndBytesConfig(**qlora_quantization_kwargs()), "dtype": "bfloat16"}


def vllm_grpo_kwargs(mode: str = "server", *, host: str = "127.0.0.1", port: int = 8000) -> dict[str, Any]:
    """``GRPOConfig`` fields for vLLM generation in ``mode`` (``server`` or ``colocate``)."""
    if mode not in ("server", "colocate"):
        raise ValueError(f"vllm_mode {mode!r} is not server or colocate. Next step: use one of them")
    kw: dict[str, Any] = {"use_vllm": True, "vllm_mode": mode}
    if mode == "server":
        kw.update(vllm_server_host=host, vllm_server_port=port)
    return kw


def vllm_serve_command(
    base_model: str, *, port: int = 8000, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9
) -> list[str]:
    """The ``trl vllm-serve`` command line the operator starts beside a ``server``-mode GRPO run
    (one GPU for vLLM, the rest for ``accelerate launch``)."""
    return [
        "trl",
        "vllm-serve",
        "--model",
        base_model,
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tensor_parallel_size),
        "--gpu-memory-utilization",
        str(gpu_memory_utilization),
    ]


def check_vllm(*, cuda: bool | None = None) -> None:
    """Raise :class:`NeedsGpuError` (``VLLM_ON_CPU``) unless CUDA is available."""
    require_cuda(VLLM_ON_CPU, cuda=cuda)

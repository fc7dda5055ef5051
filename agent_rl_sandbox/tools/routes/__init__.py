"""Training-route recommendation from evidence: rule/hook, prompt, SFT, DPO/KTO, GRPO or agentic
GRPO (or distillation); LoRA, QLoRA or full; starting hyperparameters; what is still missing.

Public surface:

- :class:`RouteService`: the ``route_recommend`` tool (signals from the store and the tasks).
- :func:`recommend`: the decision over explicit and derived signals.
- :func:`derive_signals`: signals from finished trajectories and task files.
- :func:`estimate`, :class:`ModelShape`, :func:`lora_params`, :func:`nearest_shape`: the memory estimator.
- :func:`parse_params`: ``"7B"`` -> 7e9; :func:`check_gpu`: a GPU name is known or comes with its memory.
- :func:`local_model_signals`: a local model folder's size and shape (safetensors headers, config.json).
- :data:`RULES`, :data:`THRESHOLDS`, :func:`hyperparameters`: the decision table (``_table.py``).
- :class:`RouteInputError`: bad input, naming the argument.
"""

from agent_rl_sandbox.tools.routes._local_model import LocalModel, local_model_signals
from agent_rl_sandbox.tools.routes._memory import ModelShape, estimate, lora_params, nearest_shape
from agent_rl_sandbox.tools.routes._recommend import KNOWN_GPU_GIB, check_gpu, parse_params, recommend
from agent_rl_sandbox.tools.routes._service import RouteService
from agent_rl_sandbox.tools.routes._signals import Derived, RouteInputError, derive_signals
from agent_rl_sandbox.tools.routes._table import RULES, THRESHOLDS, Thresholds, hyperparameters

__all__ = [
    "KNOWN_GPU_GIB",
    "RULES",
    "THRESHOLDS",
    "Derived",
    "LocalModel",
    "ModelShape",
    "RouteInputError",
    "RouteService",
    "Thresholds",
    "check_gpu",
    "derive_signals",
    "estimate",
    "hyperparameters",
    "local_model_signals",
    "lora_params",
    "nearest_shape",
    "parse_params",
    "recommend",
]

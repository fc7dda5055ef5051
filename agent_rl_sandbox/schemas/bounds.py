"""Size limits of every tool argument an agent can fill: the one place they are written down.

Text fields are bounded in characters (pydantic ``max_length``: "String should have at most N
characters"); free-form JSON fields (step ``extra``, ``metrics``, tool-call ``arguments``,
observations, tool definitions) in bytes of their compact JSON encoding, checked by
:func:`check_json_bytes`, whose error names the field, its size and the limit. A rejected call
stores nothing. Output fields are bounded separately (``Settings.max_output_bytes`` and
``max_result_items``).

======================================  ==========================  =================================
field                                   limit                       constant
======================================  ==========================  =================================
sandbox_exec ``command``                20,000 characters           :data:`COMMAND_CHARS`
sandbox_write_file ``content``          1,000,000 characters        :data:`FILE_CONTENT_CHARS`
any sandbox ``path``, each claim path   1,024 characters            :data:`PATH_CHARS`
sandbox_claim ``paths``                 200 paths                   :data:`CLAIM_PATHS`
sandbox_claim ``reason``                2,000 characters            :data:`REASON_CHARS`
sandbox_finish ``message``,             20,000 characters           :data:`FINAL_MESSAGE_CHARS`
trajectory_finish ``final_message``
ids and names (task, agent, model...)   200 characters              :data:`NAME_CHARS`
trajectory_start ``tool_definitions``   200 tools, 256 KiB JSON     :data:`TOOL_DEFINITIONS_BYTES`
step ``message``                        200,000 characters          :data:`STEP_MESSAGE_CHARS`
step ``tool_calls``                     64 calls, 64 KiB JSON       :data:`TOOL_CALLS_BYTES`
step ``observation``                    256 KiB JSON                :data:`OBSERVATION_BYTES`
step ``metrics``                        16 KiB JSON                 :data:`METRICS_BYTES`
step ``extra``                          64 KiB JSON                 :data:`EXTRA_BYTES`
trajectory_log_step ``steps``           500 steps, 4 MiB JSON       :data:`BATCH_BYTES`
======================================  ==========================  =================================
"""

from __future__ import annotations

import json
from typing import Any

COMMAND_CHARS = 20_000
FILE_CONTENT_CHARS = 1_000_000
PATH_CHARS = 1024
CLAIM_PATHS = 200
REASON_CHARS = 2000
FINAL_MESSAGE_CHARS = 20_000
NAME_CHARS = 200
TOOL_DEFINITIONS_BYTES = 256 * 1024
STEP_MESSAGE_CHARS = 200_000
TOOL_CALLS_BYTES = 64 * 1024
OBSERVATION_BYTES = 256 * 1024
METRICS_BYTES = 16 * 1024
EXTRA_BYTES = 64 * 1024
BATCH_STEPS = 500
BATCH_BYTES = 4 * 1024 * 1024


def json_bytes(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (non-JSON values through ``str``)."""
    return len(
        json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8", "surrogatepass")
    )


def check_json_bytes(field: str, value: Any, limit: int) -> Any:
    """Return ``value`` when its JSON encoding is at most ``limit`` bytes; else raise
    ``ValueError`` naming ``field``, its size and the limit (pydantic reports it on the field)."""
    if value is None:
        return value
    size = json_bytes(value)
    if size > limit:
        raise ValueError(
            f"{field} is {size:,} bytes as JSON, over the limit of {limit:,} bytes (schemas/bounds.py); "
            f"shorten it or keep large data in a file and name the file instead"
        )
    return value

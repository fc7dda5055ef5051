"""The JSON Schema files of the evals data contract, generated from the pydantic models.

``python -m agent_rl_sandbox.tools.evals.schema_files`` rewrites them; a test keeps each committed
file equal to :func:`render_schema`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from agent_rl_sandbox.schemas import reward

SCHEMA_DIR = Path(reward.__file__).resolve().parent
"""Folder of the committed schema files (``agent_rl_sandbox/schemas``)."""

SCHEMA_FILES: dict[str, type[BaseModel]] = {
    "reward_spec.schema.json": reward.RewardSpec,
    "eval_gates.schema.json": reward.GatesConfig,
    "port_daddy_suite.schema.json": reward.PortDaddySuite,
    "eval_report.schema.json": reward.EvalReport,
}


def render_schema(name: str) -> str:
    """The text of schema file ``name``: Draft 2020-12, sorted keys, 2-space indent, trailing newline."""
    model = SCHEMA_FILES[name]
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://agent-rl-sandbox.invalid/schemas/{name}",
        **model.model_json_schema(by_alias=True),
    }
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schema_files(directory: Path | None = None) -> list[Path]:
    """Write every schema file into ``directory`` (default :data:`SCHEMA_DIR`); returns the paths."""
    directory = Path(directory or SCHEMA_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name in SCHEMA_FILES:
        path = directory / name
        path.write_text(render_schema(name), encoding="utf-8")
        out.append(path)
    return out


if __name__ == "__main__":  # pragma: no cover
    import sys

    for p in write_schema_files():
        sys.stdout.write(f"{p}\n")

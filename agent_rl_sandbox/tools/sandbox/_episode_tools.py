"""The sandbox tools a model plays an episode with, declared once.

A model that plays a sandbox episode (the local policy agent, a TRL ``environment_factory``
rollout) sees these tools as function declarations in its chat template, and a model trained on
exported trajectories saw the same declarations in its training rows. They must be byte-identical
across the three, or the model is evaluated on a prompt it was never trained on. So this module is
the one source:

- :func:`tool_declaration` gives a declaration in the shape ``transformers.utils.get_json_schema``
  produces for a typed Python function (``{"type": "function", "function": {"name",
  "description", "parameters": {"type": "object", "properties", "required"}, "return"}}``);
- :func:`google_docstring` gives the docstring from which ``get_json_schema`` parses that same
  declaration back (the training environment's methods carry it; a test checks the round trip);
- the training exports declare this project's tools with :func:`tool_declaration` too.

The sandbox id is not a parameter: the player owns the sandbox and binds it. Each tool runs the
:class:`~agent_rl_sandbox.tools.sandbox.SandboxService` method the MCP tool of the same name runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agent_rl_sandbox.schemas import tools as io


@dataclass(frozen=True)
class Param:
    """One parameter: its JSON type (``string``, ``integer``, ``array`` of strings) and description."""

    name: str
    json_type: str
    description: str


@dataclass(frozen=True)
class EpisodeTool:
    """A sandbox tool as a model sees it, and the service method that runs it."""

    name: str
    method: str
    """The ``SandboxService`` method (the one the MCP tool of the same name calls)."""
    input_model: type[BaseModel]
    description: str
    params: tuple[Param, ...]
    """Every parameter is required (optional MCP arguments keep their defaults)."""


EPISODE_TOOLS: dict[str, EpisodeTool] = {
    t.name: t
    for t in (
        EpisodeTool(
            "sandbox_claim",
            "claim",
            io.SandboxClaimInput,
            "Claim files or folders before editing them.",
            (Param("paths", "array", "Files or folders you are about to edit."),),
        ),
        EpisodeTool(
            "sandbox_exec",
            "exec",
            io.SandboxExecInput,
            "Run a shell command in the sandbox.",
            (Param("command", "string", "Shell command, run with bash -c in the repo root."),),
        ),
        EpisodeTool(
            "sandbox_finish",
            "finish",
            io.SandboxFinishInput,
            "End the episode with your final message.",
            (Param("message", "string", "Final message: what you did and the evidence."),),
        ),
        EpisodeTool(
            "sandbox_read_file",
            "read_file",
            io.SandboxReadFileInput,
            "Read a file of the sandbox.",
            (Param("path", "string", "Path relative to the repo root."),),
        ),
        EpisodeTool(
            "sandbox_write_file",
            "write_file",
            io.SandboxWriteFileInput,
            "Write a whole file in the sandbox.",
            (
                Param("path", "string", "Path relative to the repo root; claim it first."),
                Param("content", "string", "The whole new content of the file."),
            ),
        ),
    )
}
"""By name, in the order ``inspect.getmembers`` lists methods (alphabetical), which is the order a
TRL environment's tools are rendered in."""

_PY_TYPES = {"string": "str", "integer": "int", "array": "list[str]"}


def _json_schema(p: Param) -> dict[str, Any]:
    if p.json_type == "array":
        return {"type": "array", "items": {"type": "string"}, "description": p.description}
    return {"type": p.json_type, "description": p.description}


def tool_declaration(name: str) -> dict[str, Any]:
    """The function declaration of episode tool ``name`` (``get_json_schema``'s shape, with
    ``"return": {"type": "string"}``). Raises ``KeyError`` for a name not in :data:`EPISODE_TOOLS`."""
    t = EPISODE_TOOLS[name]
    return {
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description,
            "parameters": {
                "type": "object",
                "properties": {p.name: _json_schema(p) for p in t.params},
                "required": [p.name for p in t.params],
            },
            "return": {"type": "string"},
        },
    }


def tool_declarations(names: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """Declarations of ``names`` in :data:`EPISODE_TOOLS` order (alphabetical), unknown names left out."""
    return [tool_declaration(n) for n in EPISODE_TOOLS if n in names]


def python_annotation(p: Param) -> str:
    """The Python annotation text of a parameter (``str``, ``int``, ``list[str]``)."""
    return _PY_TYPES[p.json_type]


def google_docstring(name: str) -> str:
    """A Google-style docstring from which ``get_json_schema`` parses :func:`tool_declaration`'s
    description and parameter descriptions. Raises ``KeyError`` for an unknown name."""
    t = EPISODE_TOOLS[name]
    lines = [t.description, ""]
    if t.params:
        lines.append("Args:")
        lines += [f"    {p.name}: {p.description}" for p in t.params]
    return "\n".join(lines).rstrip()

"""Normalise recorded steps into actions the criteria reason about.

Sandbox tools, Claude Code hook tools and common agent tools name the same actions differently;
this module maps each step's tool calls onto a small vocabulary: ``claim``, ``edit``, ``command``,
``read``, ``other``. Pure functions over :class:`~agent_rl_sandbox.schemas.trajectory.Step`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field

from agent_rl_sandbox.schemas.trajectory import Step

CLAIM_TOOLS = frozenset({"sandbox_claim", "claim", "claim_files"})
EDIT_TOOLS = frozenset(
    {"sandbox_write_file", "Edit", "Write", "MultiEdit", "NotebookEdit", "str_replace_editor", "apply_patch",
     "write_file", "edit_file"}
)
COMMAND_TOOLS = frozenset({"sandbox_exec", "Bash", "execute_bash", "shell", "exec_command", "run_command"})
READ_TOOLS = frozenset({"sandbox_read_file", "Read", "read_file", "Grep", "Glob"})

# A test run whose exit status is masked cannot count as evidence: `pytest || true` exits 0 whatever
# the tests did.
MASKED_EXIT = re.compile(r"\|\|\s*(true|:|exit\s+0)\b|;\s*(true|exit\s+0)\s*$|\|\s*tee\b(?!.*pipefail)")

SUCCESS_CLAIM = re.compile(
    r"\b(?:all\s+)?tests?\s+(?:now\s+)?pass(?:ed|es|ing)?\b|\b\d+\s+passed\b|\bfixed\b|\bdone\b"
    r"|\bsuccess(?:ful|fully)?\b|\bcomplete(?:d)?\b|\bworks\b|\bresolved\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Action:
    """One tool call of a step, normalised.

    ``kind`` is one of ``claim``, ``edit``, ``command``, ``read``, ``other``; ``paths`` are
    sandbox-relative paths (claims and edits, plus files a command changed); ``command`` is the
    command text for ``command`` actions.
    """

    step_id: int
    tool: str
    kind: str
    args_json: str
    provenance: str
    outcome: str
    exit_code: int | None
    paths: tuple[str, ...] = ()
    command: str | None = None
    changed_paths: tuple[str, ...] = field(default=())


def _norm_path(p: str) -> str:
    p = p.strip()
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") if p not in ("", "/") else p


def _paths_from_args(args: dict) -> tuple[str, ...]:
    out: list[str] = []
    for key in ("paths", "files"):
        v = args.get(key)
        if isinstance(v, list):
            out.extend(str(x) for x in v if isinstance(x, str))
    for key in ("path", "file_path", "file", "notebook_path"):
        v = args.get(key)
        if isinstance(v, str):
            out.append(v)
    return tuple(_norm_path(p) for p in out)


def actions_of(steps: list[Step]) -> list[Action]:
    """Flatten steps into actions, in step order (then call order within a step)."""
    out: list[Action] = []
    for step in steps:
        changed = tuple(_norm_path(p) for p in step.extra.get("files_changed", []) if isinstance(p, str))
        for call in step.tool_calls or []:
            name = call.function_name
            args = call.arguments if isinstance(call.arguments, dict) else {}
            if name in CLAIM_TOOLS:
                kind = "claim"
            elif name in EDIT_TOOLS:
                kind = "edit"
            elif name in COMMAND_TOOLS:
                kind = "command"
            elif name in READ_TOOLS:
                kind = "read"
            else:
                kind = "other"
            command = args.get("command") if kind == "command" else None
            out.append(
                Action(
                    step_id=step.step_id,
                    tool=name,
                    kind=kind,
                    args_json=json.dumps(args, sort_keys=True, ensure_ascii=False),
                    provenance=step.provenance,
                    outcome=step.outcome,
                    exit_code=step.exit_code,
                    paths=_paths_from_args(args) if kind in ("claim", "edit", "read") else (),
                    command=command if isinstance(command, str) else None,
                    changed_paths=changed,
                )
            )
    return out


def edited_paths(action: Action) -> tuple[str, ...]:
    """Paths an action changed: the edit's target paths plus any files the server saw change."""
    if action.kind == "edit" and action.outcome in ("ok", "unknown"):
        return tuple(dict.fromkeys(action.paths + action.changed_paths))
    return action.changed_paths


def covered(path: str, claims: list[str]) -> bool:
    """True when ``path`` is covered by a claim: equal, under a claimed directory, or an fnmatch glob."""
    path = _norm_path(path)
    for c in claims:
        c = _norm_path(c)
        if c in (".", "", "/"):
            return True
        if path == c or path.startswith(c + "/") or fnmatch.fnmatchcase(path, c):
            return True
    return False


def is_masked(command: str) -> bool:
    """True when the command's exit status cannot reflect the tests (``|| true``, ``; exit 0``)."""
    return bool(MASKED_EXIT.search(command))


def success_claims(message: str) -> list[str]:
    """Phrases in a final message that claim success, in order of appearance (deduplicated)."""
    return list(dict.fromkeys(m.group(0).lower() for m in SUCCESS_CLAIM.finditer(message or "")))

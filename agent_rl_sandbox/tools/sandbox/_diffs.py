"""The sandbox's diff after each step that changed it, for a human reading a trajectory.

Every step that went through a sandbox tool carries ``state_ref``, the git tree of the working copy
after it (:meth:`~._git.WorkingCopy.snapshot`). :func:`step_diffs` walks the steps in order and, for
each step whose tree differs from the one before it (the base commit's tree for the first), gives
the unified diff between the two, cut to ``max_bytes`` (UTF-8, undecodable bytes replaced). Trees
are read from the sandbox's own git store, so nothing the agent wrote is executed or interpreted;
a tree that is no longer stored (a pruned snapshot, a removed sandbox) gives a note, not an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools.sandbox._git import GitError, WorkingCopy

MAX_DIFF_BYTES = 20_000
"""Default cap on one step's diff text."""


def step_diffs(
    wc: WorkingCopy, base_tree: str, steps: Sequence[Step], max_bytes: int = MAX_DIFF_BYTES
) -> dict[int, str]:
    """``{step_id: diff text}`` for the steps whose ``state_ref`` changed the tree (see the module
    docstring); steps without a ``state_ref`` are skipped. A diff longer than ``max_bytes`` ends with
    a line saying how much was cut. Never raises for a missing tree."""
    out: dict[int, str] = {}
    prev = base_tree
    for s in steps:
        if not s.state_ref or s.state_ref == prev:
            continue
        try:
            raw = wc.git("diff", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", prev, s.state_ref)
        except GitError as e:
            out[s.step_id] = f"(diff not available: {e})"
        else:
            text = raw[:max_bytes].decode("utf-8", errors="replace")
            if len(raw) > max_bytes:
                text += f"\n... ({len(raw) - max_bytes} more bytes not shown)\n"
            out[s.step_id] = text
        prev = s.state_ref
    return out

"""What keeps agents out of each other's sandboxes and out of held-out answers.

- **Sandbox ids are capabilities.** :func:`sandbox_capability` makes ``sbx_`` plus 128 bits from
  :func:`secrets.token_urlsafe`; an id is returned only to the session that created the sandbox and
  is never listed to another one (``trajectory_list``/``trajectory_get`` blank it on rows the caller
  does not own). Knowing an id is still not enough: every sandbox tool checks the stored owner
  (:func:`ensure_sandbox_owner`) before it reads, runs, writes, records or resets anything, so a
  refused call leaves no step in the owner's trajectory.
- **Hidden tests stay hidden, on every split.** :func:`agent_verifier_output` is the one place
  that decides what of the verifier's output an agent sees: only whether the hidden checks passed
  (and the exit code), never a per-check result: no count (``9 of 10 passed``), test name,
  parameters, expected value, duration or the code's output. A count is a pass-count oracle: an
  agent that hard-codes one guessed case per episode (or per sandbox of the same task) sees the
  count rise and climbs to the reward without fixing anything. Train tasks get no more than
  held-out ones: a named case with its expected value lets an agent write a lookup table of the
  hidden cases and score 1.0 with the bug left in, and other agents read train trajectories too.
  The same text is what the scorer sees, so no criterion explanation, stored score,
  ``trajectory_get``, ``eval_score`` or export carries more. The full detail is written only where
  the operator reads it: ``<reports>/<session>.verifier.json`` (the CLI ``trajectories show``
  prints it).
"""

from __future__ import annotations

import secrets

from agent_rl_sandbox.tools._caller import Caller, ensure_owner

CAPABILITY_BYTES = 16
"""Random bytes in a sandbox id (128 bits)."""

WITHHELD = (
    "counts, names, arguments, expected values and output of hidden checks are withheld from agents on every split"
)
"""The note every agent-visible verifier text ends with."""


def sandbox_capability() -> str:
    """A new sandbox id: ``sbx_`` and 22 URL-safe characters (128 random bits), safe in paths."""
    return "sbx_" + secrets.token_urlsafe(CAPABILITY_BYTES)


def ensure_sandbox_owner(caller: Caller, owner: str | None, sandbox_id: str) -> None:
    """Refuse a sandbox action unless ``caller`` created the sandbox (stored ``owner``).
    Raises :class:`~agent_rl_sandbox.tools.errors.ActionError` with the next step."""
    ensure_owner(
        caller,
        owner,
        "sandbox",
        sandbox_id,
        "call sandbox_reset with a task_id to get your own sandbox, and use the sandbox_id it returns",
    )


def agent_verifier_output(split: str, exit_code: int | None) -> str:
    """What an agent (and the scorer's explanations) may see of the hidden verifier's outcome.

    ``split`` is the task's (``train`` or ``heldout``); ``exit_code`` is ``None`` when the
    verifier never finished. Either split gets one line with the verdict and the exit code only:
    nothing of the verifier's own text (its counts, names, timings) is taken, so two failing
    trees read the same however many hidden checks each passed."""
    verdict = "did not finish" if exit_code is None else ("passed" if exit_code == 0 else "failed")
    return (
        f"hidden checks {verdict} (exit {exit_code}) [{'held-out' if split == 'heldout' else 'train'} task: {WITHHELD}]"
    )

"""What keeps agents out of each other's sandboxes and out of held-out answers.

- **Sandbox ids are capabilities.** :func:`sandbox_capability` makes ``sbx_`` plus 128 bits from
  :func:`secrets.token_urlsafe`; an id is returned only to the session that created the sandbox and
  is never listed to another one (``trajectory_list``/``trajectory_get`` blank it on rows the caller
  does not own). Knowing an id is still not enough: every sandbox tool checks the stored owner
  (:func:`ensure_sandbox_owner`) before it reads, runs, writes, records or resets anything, so a
  refused call leaves no step in the owner's trajectory.
- **Hidden tests stay hidden, on every split.** :func:`agent_verifier_output` is the one place
  that decides what of the verifier's output an agent sees: only whether the hidden checks passed,
  the exit code and the counts (``N passed``, ``N failed``, ``K of N passed``), never a test's
  name, parameters, expected value or the code's output. Train tasks get no more than held-out
  ones: a named case with its expected value lets an agent write a lookup table of the hidden cases
  and score 1.0 with the bug left in, and other agents read train trajectories too. The same text
  is what the scorer sees, so no criterion explanation, stored score, ``trajectory_get``,
  ``eval_score`` or export carries more. The full detail is written only where the operator reads
  it: ``<reports>/<session>.verifier.json`` (the CLI ``trajectories show`` prints it).
"""

from __future__ import annotations

import re
import secrets

from agent_rl_sandbox.tools._caller import Caller, ensure_owner

CAPABILITY_BYTES = 16
"""Random bytes in a sandbox id (128 bits)."""

WITHHELD = "names, arguments, expected values and output of hidden checks are withheld from agents on every split"
"""The note every agent-visible verifier text ends with."""

_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b")
_OF = re.compile(r"\b(\d+) of (\d+) passed\b")


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


def verifier_counts(output: str) -> str:
    """The test counts found in a verifier's output (``"3 passed, 2 failed"``), or ``""``.
    Only numbers and fixed words are taken from ``output``."""
    of = _OF.findall(output)
    if of:
        ok, total = of[-1]
        return f"{ok} of {total} passed"
    found: dict[str, int] = {}
    for n, word in _COUNT.findall(output):
        word = {"error": "errors", "warning": "warnings"}.get(word, word)
        found[word] = int(n)  # pytest prints its summary last: the last count of each word wins
    return ", ".join(f"{n} {w}" for w, n in found.items())


def agent_verifier_output(split: str, exit_code: int | None, output: str) -> str:
    """What an agent (and the scorer's explanations) may see of the hidden verifier's output.

    ``split`` is the task's (``train`` or ``heldout``); ``exit_code`` is ``None`` when the
    verifier never finished. Either split gets one line with the verdict, the exit code and the
    counts only (taken from ``output`` as numbers and fixed words, see :func:`verifier_counts`)."""
    verdict = "did not finish" if exit_code is None else ("passed" if exit_code == 0 else "failed")
    counts = verifier_counts(output)
    return (
        f"hidden checks {verdict} (exit {exit_code})"
        + (f": {counts}" if counts else "")
        + f" [{'held-out' if split == 'heldout' else 'train'} task: {WITHHELD}]"
    )

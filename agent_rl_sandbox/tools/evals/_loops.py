"""Loop detection: the same failing call made again and again.

A call *fails* when its step's outcome is ``error``, ``refused`` or ``limit``, when it exited
non-zero, or (no exit code recorded) when its observation reads like an error (``Traceback``, ``No
such file``, ``command not found``, ``Error:`` ...), so a loop is found whether or not the client
marked the results as errors. Calls are the same when tool name and canonical JSON arguments are equal.
"""

from __future__ import annotations

from agent_rl_sandbox.schemas.reward import LoopFinding
from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools._claims import ERROR_TEXT
from agent_rl_sandbox.tools.evals._actions import Action, actions_of

DEFAULT_MIN_REPEATS = 3


def call_failed(action: Action) -> bool:
    """True when the call failed by any signal: its outcome, a non-zero exit code, or, when no exit
    code was recorded, error text in its result (clients do not always mark errors)."""
    if action.malformed or action.outcome in ("error", "refused", "limit", "cancelled"):
        return True
    if action.exit_code is not None:
        return action.exit_code != 0
    return bool(action.observation) and bool(ERROR_TEXT.search(action.observation))


def find_loops(actions: list[Action], min_repeats: int = DEFAULT_MIN_REPEATS) -> list[LoopFinding]:
    """Runs of ``min_repeats`` or more consecutive identical failing calls, in order."""
    found: list[LoopFinding] = []
    run: list[Action] = []

    def close() -> None:
        if len(run) >= min_repeats:
            found.append(
                LoopFinding(
                    tool=run[0].tool, args=run[0].args_json[:200], step_ids=[a.step_id for a in run], repeats=len(run)
                )
            )

    for a in actions:
        failed = call_failed(a)
        if run and failed and a.tool == run[-1].tool and a.args_json == run[-1].args_json:
            run.append(a)
            continue
        close()
        run = [a] if failed else []
    close()
    return found


def detect_loops(steps: list[Step], min_repeats: int = DEFAULT_MIN_REPEATS) -> list[LoopFinding]:
    """Loop findings of a trajectory's steps (see :func:`find_loops`)."""
    return find_loops(actions_of(steps), min_repeats)

"""The one rule that turns a command's outcome into its exit status (see the package docstring).

Commands end with :func:`finish` (or :func:`verdict`) on a result, or raise :class:`BadInput`;
errors from the domain that mean the input was the problem (:class:`ActionError`, the store's
driver errors) are turned into exit status 2 by :func:`bad_input_text` in the root group, so no
command decides a number itself and none prints a traceback for a user's mistake.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NoReturn

import typer


class Outcome(IntEnum):
    """Exit statuses, worst last (so ``max`` of several outcomes is the overall one)."""

    OK = 0
    """The command did what was asked and every verdict passed."""
    FAILED = 1
    """The input was fine and the verdict is no: a gate failed, validation found errors, a task
    check failed, a file imported with problems, an export was refused or failed validation."""
    BAD_INPUT = 2
    """The command could not judge anything: an unknown task or trajectory id, an unreadable or
    invalid file, nothing to score, an unknown option value, bad settings or an unreachable store."""


class BadInput(Exception):
    """Raised by a command when its input is the problem; printed as ``error: MESSAGE. Next step:
    NEXT_STEP`` on one line of stderr, exit status 2."""

    def __init__(self, message: str, next_step: str = ""):
        super().__init__(message)
        self.message = message
        self.next_step = next_step

    def text(self) -> str:
        """Message and next step in one line."""
        return f"{self.message}. Next step: {self.next_step}" if self.next_step else self.message


def finish(outcome: Outcome) -> NoReturn:
    """End the command with ``outcome``'s exit status."""
    raise typer.Exit(int(outcome))


def verdict(passed: bool) -> NoReturn:
    """End the command: 0 when ``passed``, else 1 (the verdict failed)."""
    finish(Outcome.OK if passed else Outcome.FAILED)


def bad_input_text(exc: BaseException) -> str | None:
    """The one-line message for an exception that means bad input, or ``None`` for anything else
    (a bug, which keeps its traceback)."""
    from agent_rl_sandbox.tools.errors import ActionError, store_error_text

    if isinstance(exc, BadInput):
        return exc.text()
    if isinstance(exc, ActionError):
        return exc.agent_text()
    return store_error_text(exc)  # SQLAlchemy's errors (bad URL, unreachable server), else None


def fail_bad_input(exc: BaseException) -> NoReturn:
    """Print ``exc`` as one ``error:`` line on stderr and end with exit status 2; re-raises ``exc``
    when it does not mean bad input."""
    text = bad_input_text(exc)
    if text is None:
        raise exc
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(int(Outcome.BAD_INPUT)) from None

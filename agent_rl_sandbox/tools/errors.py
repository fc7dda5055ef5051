"""The one error type domain code raises for failures an agent (or a user) can act on, and the signal
that a non-waiting call would have had to wait."""

from __future__ import annotations


class ActionError(Exception):
    """A failure with a next step. ``str(err)`` is the message; ``hint`` says what to do next.

    The MCP adapter turns it into a flagged ``ToolError`` result; the CLI prints it as one ``error:``
    line and exits 2 (bad input; see :mod:`agent_rl_sandbox.cli`).
    """

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def agent_text(self) -> str:
        """Message and next step in one line, as an agent should read it."""
        return f"{self.message}. Next step: {self.hint}" if self.hint else self.message


class WouldWait(Exception):
    """Raised by a domain method called with ``nowait=True`` when it would have to wait (for the
    database's write lock, or a server round trip it does not make without waiting) before doing
    anything: nothing was written. The caller runs the same call again, allowed to wait (the MCP
    adapter does so in a worker thread). Never an agent-facing error."""


def store_error_text(exc: BaseException) -> str | None:
    """The one-line message (with its next step) for a failure to open the store: SQLAlchemy's
    errors (a malformed URL, an unreachable server), matched by module so that callers which never
    touch the store do not pay for importing SQLAlchemy. ``None`` for any other exception. The CLI
    prints it as its ``error:`` line; the stdio server answers it to a tool call when the store it
    opens on first use cannot be opened."""
    if not type(exc).__module__.startswith("sqlalchemy."):
        return None
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (
        f"cannot open the store: {first}. Next step: check AGENT_RL_SANDBOX_DATABASE_URL "
        "(e.g. postgresql+psycopg://user@host/db) or unset it to use the SQLite file in AGENT_RL_SANDBOX_HOME"
    )

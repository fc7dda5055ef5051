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

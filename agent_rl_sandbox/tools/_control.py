"""What a long domain call can see of the request that started it: cancellation and progress.

A face (the MCP adapter) makes one :class:`CallControl` per call and passes it to domain methods
that take a ``control`` parameter (``SandboxService.exec``). The domain runs in a worker thread, so
everything here is thread-safe and synchronous:

- the face calls :meth:`CallControl.cancel` when the client cancels the call (MCP
  ``notifications/cancelled``, e.g. a client-side timeout); the domain passes
  :attr:`CallControl.cancelled` to whatever it runs (the command runner kills the command's process
  group and uid and the step is recorded ``cancelled``);
- the domain states what it is running and for how long at most (:meth:`CallControl.expect`); the
  face reads it (:meth:`CallControl.expected`) for the progress notifications it sends when the
  client gave a progress token.

Direct callers (the CLI, tests) pass nothing: a call without a control is never cancelled.
"""

from __future__ import annotations

import threading


class CallControl:
    """Cancellation flag and progress description of one call. Thread-safe."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        """Set once the client cancelled the call."""
        self._lock = threading.Lock()
        self._expected: tuple[float | None, str] = (None, "")

    def cancel(self) -> None:
        """Mark the call cancelled (idempotent)."""
        self.cancelled.set()

    def expect(self, total_s: float | None, what: str) -> None:
        """Say what the call is running now (``what``, one line) and the seconds it may take at
        most (``total_s``; ``None``: unknown)."""
        with self._lock:
            self._expected = (total_s, what)

    def expected(self) -> tuple[float | None, str]:
        """``(total seconds or None, what)`` as last set by :meth:`expect`."""
        with self._lock:
            return self._expected

"""Per-identity quotas: open sandboxes, running commands, pending training requests, step rate.

Each limit comes from :class:`~agent_rl_sandbox.settings.Settings` (``quota_*``; ``None`` means no
limit). Going over raises :class:`QuotaExceeded`, an :class:`ActionError` whose text starts with
``quota exceeded:``, names the limit and its value, and says when to retry::

    quota exceeded: open_sandboxes is 2 for identity idn_... (2 open). Next step: retry after
    sandbox_finish on one of them (an idle one is cleaned up after 3600 s)

Where each count lives:

- ``open_sandboxes`` and ``pending_training`` are counted in the database (rows with the identity's
  owner id), so they hold across every server process sharing it. The check and the action are not
  one transaction: within a process a lock per identity serialises them; across ``P`` processes an
  identity racing itself can overshoot by at most ``P - 1``.
- ``running_commands`` and ``steps_per_minute`` are counted in this process (a counter and a
  60-second sliding window per identity), so with ``P`` server processes an identity spread over all
  of them gets up to ``P`` times the limit. A load balancer that pins an identity to one server
  (hash on the ``Authorization`` header) makes them exact; see the README's deployment section.

Only the operator is never limited. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.store._schema import jobs, sandboxes

PENDING_JOB_STATES = ("awaiting_approval", "approved", "queued")
"""States that count as a pending training request (not yet running, not final)."""

WINDOW_S = 60.0
"""The step-rate window (seconds)."""


class QuotaExceeded(ActionError):
    """An identity went over one of its quotas. ``limit`` names it (``open_sandboxes``,
    ``running_commands``, ``pending_training``, ``steps_per_minute``), ``value`` is its value and
    ``retry_after_s`` the seconds after which a retry can succeed (``None``: when the named
    condition changes)."""

    def __init__(self, limit: str, value: int, owner: str, now: str, hint: str, retry_after_s: float | None = None):
        super().__init__(f"quota exceeded: {limit} is {value} for identity {owner} ({now})", hint)
        self.limit = limit
        self.value = value
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class QuotaLimits:
    """The limits, each ``None`` for no limit."""

    open_sandboxes: int | None = None
    running_commands: int | None = None
    pending_training: int | None = None
    steps_per_minute: int | None = None
    idle_seconds: float = 3600.0
    """Where an idle sandbox is cleaned up (said in the ``open_sandboxes`` hint)."""
    max_exec_seconds: float = 45.0
    """The longest a command runs (said in the ``running_commands`` hint)."""
    job_expiry_hours: float = 72.0
    """When an unapproved request expires (said in the ``pending_training`` hint)."""


class Quotas:
    """Checks an identity's quotas before an action (see the module docstring).

    ``engine`` is the store's database; ``clock`` (seconds, monotonic) is injectable for tests."""

    def __init__(self, limits: QuotaLimits, engine: Engine, clock: Callable[[], float] = time.monotonic):
        self.limits = limits
        self._read = engine.execution_options(readonly=True)
        self._clock = clock
        self._guard = threading.Lock()
        self._owner_locks: dict[str, threading.Lock] = {}
        self._running: dict[str, int] = {}
        self._steps: dict[str, deque[tuple[float, int]]] = {}

    def _lock_of(self, owner: str) -> threading.Lock:
        with self._guard:
            return self._owner_locks.setdefault(owner, threading.Lock())

    def _count(self, q) -> int:
        with self._read.connect() as conn:
            return int(conn.execute(q).scalar_one())

    @contextmanager
    def open_sandbox(self, caller: Caller) -> Iterator[None]:
        """Around creating a sandbox: refuse when ``caller`` already has ``open_sandboxes`` open."""
        limit = self.limits.open_sandboxes
        if caller.operator or limit is None:
            yield
            return
        with self._lock_of(caller.owner_id):
            n = self._count(
                select(func.count())
                .select_from(sandboxes)
                .where(sandboxes.c.owner == caller.owner_id, sandboxes.c.status == "open")
            )
            if n >= limit:
                raise QuotaExceeded(
                    "open_sandboxes", limit, caller.owner_id, f"{n} open",
                    f"retry after sandbox_finish on one of them (an idle one is cleaned up after "
                    f"{self.limits.idle_seconds:g} s), or sandbox_reset an existing sandbox_id to reuse it",
                )  # fmt: skip
            yield

    @contextmanager
    def running_command(self, caller: Caller) -> Iterator[None]:
        """Around a command: refuse when ``caller`` already has ``running_commands`` running here."""
        limit = self.limits.running_commands
        if caller.operator or limit is None:
            yield
            return
        owner = caller.owner_id
        with self._guard:
            n = self._running.get(owner, 0)
            if n >= limit:
                raise QuotaExceeded(
                    "running_commands", limit, owner, f"{n} running",
                    f"retry when one of your commands ends (each ends within {self.limits.max_exec_seconds:g} s)",
                    retry_after_s=self.limits.max_exec_seconds,
                )  # fmt: skip
            self._running[owner] = n + 1
        try:
            yield
        finally:
            with self._guard:
                left = self._running.get(owner, 1) - 1
                if left > 0:
                    self._running[owner] = left
                else:
                    self._running.pop(owner, None)

    @contextmanager
    def training_request(self, caller: Caller) -> Iterator[None]:
        """Around a training request: refuse when ``caller`` has ``pending_training`` jobs not yet running."""
        limit = self.limits.pending_training
        if caller.operator or limit is None:
            yield
            return
        with self._lock_of(caller.owner_id):
            n = self._count(
                select(func.count())
                .select_from(jobs)
                .where(jobs.c.requester == caller.owner_id, jobs.c.state.in_(PENDING_JOB_STATES))
            )
            if n >= limit:
                raise QuotaExceeded(
                    "pending_training", limit, caller.owner_id, f"{n} pending",
                    f"retry after a human approves or rejects one, you cancel one (training_cancel), or one "
                    f"expires (after {self.limits.job_expiry_hours:g} h); training_list shows them",
                )  # fmt: skip
            yield

    def steps(self, caller: Caller, n: int) -> None:
        """Record ``n`` steps for ``caller`` now; refuse (recording nothing) when that would take it
        over ``steps_per_minute`` in the last 60 s."""
        limit = self.limits.steps_per_minute
        if caller.operator or limit is None or n <= 0:
            return
        owner = caller.owner_id
        now = self._clock()
        with self._guard:
            window = self._steps.setdefault(owner, deque())
            while window and window[0][0] <= now - WINDOW_S:
                window.popleft()
            used = sum(k for _, k in window)
            if used + n > limit:
                # the earliest time enough old steps have left the window for these n to fit
                need, freed, retry = used + n - limit, 0, WINDOW_S
                for at, k in window:
                    freed += k
                    if freed >= need:
                        retry = at + WINDOW_S - now
                        break
                retry = max(0.1, retry)
                hint = (
                    f"split the batch: log at most {limit} steps per call, retrying in {retry:.1f} s"
                    if n > limit
                    else f"retry in {retry:.1f} s"
                )
                raise QuotaExceeded(
                    "steps_per_minute", limit, owner, f"{used} steps in the last {WINDOW_S:g} s, {n} more asked",
                    hint, retry_after_s=retry,
                )  # fmt: skip
            window.append((now, n))

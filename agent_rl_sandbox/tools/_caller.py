"""Who is calling a domain method: the typed value every owner-scoped service method receives.

A :class:`Caller` is made by the face that received the call, never by the domain and never from
anything a client sends as an argument:

- the MCP adapter makes ``Caller.agent("mcp:<token>")`` per MCP session (a random token created when
  the session starts; see ``server/app.py``);
- the HTTP face (``server/http.py``) makes ``Caller.agent("idn_...", peers=...)`` from the identity of
  a verified bearer token (:mod:`agent_rl_sandbox.tools.identities`), so a reconnecting client keeps
  its sandboxes, whichever server process it reaches;
- the CLI, the scripted agents, benches and tests act as :data:`OPERATOR`, the human who owns the
  server and may see and act on everything.

Ownership rule (one place, :meth:`Caller.owns`): a row (sandbox or trajectory) belongs to the owner
id stored on it when it was created. An agent owns only rows carrying its own owner id, or the owner id of one of its
``peers`` (the identities it shares an explicit team scope with); rows made by
the operator, by the hook command or imported (owner ``"operator"`` or none) belong to no agent.
The operator owns everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_rl_sandbox.tools.errors import ActionError

OPERATOR_ID = "operator"
"""The owner id stored on rows the operator creates."""


@dataclass(frozen=True, slots=True)
class Caller:
    """The identity a domain call acts for.

    ``owner_id`` is stored on the sandboxes and trajectories this caller creates (at most 64
    characters); ``operator`` marks the human operator, who owns every row; ``peers`` are the owner
    ids of the other identities this caller shares a team scope with (empty for MCP sessions)."""

    owner_id: str
    operator: bool = False
    peers: frozenset[str] = frozenset()

    @classmethod
    def agent(cls, owner_id: str, peers: frozenset[str] = frozenset()) -> Caller:
        """An agent identity (with the owner ids of its team ``peers``). Raises ``ValueError`` for an
        empty id, one over 64 characters, or the operator's id, also among ``peers`` (an agent can
        never become the operator by its name)."""
        if not owner_id or len(owner_id) > 64 or owner_id == OPERATOR_ID or OPERATOR_ID in peers:
            raise ValueError(f"bad agent owner id {owner_id!r}")
        return cls(owner_id, peers=frozenset(peers) - {owner_id})

    def owns(self, owner: str | None) -> bool:
        """Whether a row stored with ``owner`` belongs to this caller or one of its team peers (see
        the module docstring)."""
        return self.operator or (owner is not None and (owner == self.owner_id or owner in self.peers))


OPERATOR = Caller(OPERATOR_ID, operator=True)
"""The human operator (CLI, scripts, tests): owns everything."""


def ensure_owner(caller: Caller, owner: str | None, what: str, ident: str, next_step: str) -> None:
    """Refuse unless ``caller`` owns a row stored with ``owner``.

    ``what`` names the kind of row (``"sandbox"``, ``"trajectory"``), ``ident`` its id and
    ``next_step`` what the caller should do instead. Raises :class:`ActionError` ``"<what> <ident>
    is not yours ..."``; it says nothing about the row beyond that it exists, so a refusal tells an
    agent nothing about another agent's work."""
    if not caller.owns(owner):
        raise ActionError(f"{what} {ident} is not yours (another session or identity created it)", next_step)


def ensure_readable(caller: Caller, owner: str | None, heldout: bool, session_id: str) -> None:
    """Refuse to show a trajectory's contents to ``caller`` when it is another owner's held-out
    trajectory (held-out answers never reach an agent that did not produce them). Raises
    :class:`ActionError`; other owners' train trajectories stay readable."""
    if heldout and not caller.owns(owner):
        raise ActionError(
            f"trajectory {session_id} is another session's held-out trajectory; its contents are not shown",
            "read your own trajectories (trajectory_list shows them), or practise the task's train variants",
        )

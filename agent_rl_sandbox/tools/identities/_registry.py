"""Identities: bearer tokens a human issues to agents, stored hashed, verified on every HTTP request.

A token is ``ars_`` plus 32 random bytes (URL-safe base64, 256 bits). Only its SHA-256 is stored
(``identities.token_hash``, unique): a token is high-entropy, so a fast hash is enough and a lookup
by hash is one indexed read; the token itself is shown once, by :meth:`IdentityRegistry.add`, and
can never be shown again (a lost token is revoked and a new identity added).

An identity's ``identity_id`` (``idn_`` plus 12 hex digits) is the owner id stored on every sandbox,
trajectory, training job and kill-switch pull it makes (``Caller.owner_id``). Its ``teams`` are
explicit team scopes: identities that share a team may act on each other's sandboxes, trajectories
and jobs (``Caller.peers``); without one, an identity reaches only its own.

Nothing here is cached: :meth:`IdentityRegistry.verify` reads the table on each call, so a
revocation takes effect at the next request on every server process sharing the database.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.store._common import new_id, utcnow
from agent_rl_sandbox.tools.store._schema import identities

TOKEN_PREFIX = "ars_"
"""Every token starts with it (so a leaked one is recognisable by secret scanners)."""
TOKEN_BYTES = 32
"""Random bytes in a token (256 bits)."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_TEAM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class IdentityError(ActionError):
    """An identity operation that cannot proceed (bad or taken name, unknown identity)."""


@dataclass(frozen=True)
class IdentityRecord:
    """One stored identity (never its token)."""

    identity_id: str
    """``idn_<12 hex>``: the owner id on everything the identity creates."""
    name: str
    teams: tuple[str, ...]
    created_at: str
    created_by: str
    revoked_at: str | None
    revoked_by: str | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def hash_token(token: str) -> str:
    """The SHA-256 hex digest stored for ``token``."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _record(row) -> IdentityRecord:
    return IdentityRecord(
        identity_id=row["identity_id"],
        name=row["name"],
        teams=tuple(json.loads(row["teams_json"])),
        created_at=row["created_at"],
        created_by=row["created_by"],
        revoked_at=row["revoked_at"],
        revoked_by=row["revoked_by"],
    )


class IdentityRegistry:
    """Create, list, revoke and verify identities in the store's ``identities`` table.

    Thread- and process-safe (each method is one transaction; names and token hashes are unique in
    the database). Raises :class:`IdentityError` for anything the human can fix."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._read = engine.execution_options(readonly=True)

    def add(self, name: str, teams: Iterable[str] = (), created_by: str = "operator") -> tuple[IdentityRecord, str]:
        """A new identity called ``name`` in ``teams``; returns it and its token (shown only now).

        Raises :class:`IdentityError` for a malformed name or team, or a name already taken (revoked
        identities keep their name: owner ids are never reused)."""
        if not _NAME.match(name):
            raise IdentityError(
                f"bad identity name {name!r}",
                "use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit",
            )
        team_list = sorted(set(teams))
        for team in team_list:
            if not _TEAM.match(team):
                raise IdentityError(f"bad team name {team!r}", "use 1-64 letters, digits, '.', '_' or '-'")
        token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        rec = IdentityRecord(new_id("idn"), name, tuple(team_list), utcnow(), created_by, None, None)
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(identities).values(
                        identity_id=rec.identity_id,
                        name=name,
                        token_hash=hash_token(token),
                        teams_json=json.dumps(team_list),
                        created_at=rec.created_at,
                        created_by=created_by,
                    )
                )
        except IntegrityError:
            raise IdentityError(
                f"identity name {name!r} is taken", "choose another name (`identities list` shows the names in use)"
            ) from None
        return rec, token

    def list(self, include_revoked: bool = True) -> list[IdentityRecord]:
        """Every identity, oldest first (revoked ones too unless ``include_revoked`` is false)."""
        q = select(identities).order_by(identities.c.created_at, identities.c.identity_id)
        if not include_revoked:
            q = q.where(identities.c.revoked_at.is_(None))
        with self._read.connect() as conn:
            return [_record(r) for r in conn.execute(q).mappings()]

    def get(self, name_or_id: str) -> IdentityRecord:
        """The identity with this name or id. Raises :class:`IdentityError` when there is none."""
        q = select(identities).where((identities.c.name == name_or_id) | (identities.c.identity_id == name_or_id))
        with self._read.connect() as conn:
            row = conn.execute(q).mappings().first()
        if row is None:
            raise IdentityError(
                f"no identity {name_or_id!r}", "`agent-rl-sandbox identities list` shows the identities"
            )
        return _record(row)

    def revoke(self, name_or_id: str, revoked_by: str = "operator") -> IdentityRecord:
        """Revoke an identity: its token is refused from the next request on. Idempotent (revoking a
        revoked identity changes nothing). Raises :class:`IdentityError` for an unknown one."""
        rec = self.get(name_or_id)
        if rec.revoked_at is None:
            with self.engine.begin() as conn:
                conn.execute(
                    update(identities)
                    .where(identities.c.identity_id == rec.identity_id, identities.c.revoked_at.is_(None))
                    .values(revoked_at=utcnow(), revoked_by=revoked_by)
                )
        return self.get(rec.identity_id)

    def verify(self, token: str) -> tuple[IdentityRecord, Caller] | None:
        """The active identity ``token`` belongs to and the :class:`Caller` it acts as (its team
        peers filled in), or ``None`` for an unknown, malformed or revoked token."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        with self._read.connect() as conn:
            row = (
                conn.execute(
                    select(identities).where(
                        identities.c.token_hash == hash_token(token), identities.c.revoked_at.is_(None)
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            rec = _record(row)
            peers: set[str] = set()
            if rec.teams:
                for other in conn.execute(
                    select(identities.c.identity_id, identities.c.teams_json).where(
                        identities.c.revoked_at.is_(None), identities.c.identity_id != rec.identity_id
                    )
                ):
                    if set(json.loads(other.teams_json)) & set(rec.teams):
                        peers.add(other.identity_id)
        return rec, Caller.agent(rec.identity_id, peers=frozenset(peers))

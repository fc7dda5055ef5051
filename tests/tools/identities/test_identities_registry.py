"""Identities on both backends: tokens are stored hashed and shown once, revocation takes effect at
the next verification, names are unique and never reused, team scopes fill ``Caller.peers``."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from agent_rl_sandbox.tools.identities import TOKEN_PREFIX, IdentityError, IdentityRegistry, hash_token
from agent_rl_sandbox.tools.store._schema import identities


def test_token_is_shown_once_and_stored_only_as_its_hash(store):
    reg = IdentityRegistry(store.engine)
    rec, token = reg.add("alice", teams=["red"], created_by="ops")
    assert token.startswith(TOKEN_PREFIX) and len(token) >= 40
    with store.engine.connect() as conn:
        rows = [dict(r) for r in conn.execute(select(identities)).mappings()]
    assert len(rows) == 1 and rows[0]["token_hash"] == hash_token(token)
    assert not any(token in str(v) for v in rows[0].values())
    assert rec.identity_id.startswith("idn_") and rec.teams == ("red",) and rec.created_by == "ops"
    found = reg.verify(token)
    assert found is not None and found[0] == rec and found[1].owner_id == rec.identity_id
    assert not found[1].operator


@pytest.mark.parametrize("bad", ["", "ars_", "ars_" + "A" * 43, "Bearer x", "operator", "ars_" + "x" * 300])
def test_unknown_or_malformed_tokens_verify_to_nothing(store, bad):
    reg = IdentityRegistry(store.engine)
    reg.add("alice")
    assert reg.verify(bad) is None


def test_revoked_token_is_refused_and_revoke_is_idempotent(store):
    reg = IdentityRegistry(store.engine)
    rec, token = reg.add("alice")
    first = reg.revoke("alice", revoked_by="ops")
    assert first.revoked_at and first.revoked_by == "ops" and not first.active
    assert reg.verify(token) is None
    assert reg.revoke(rec.identity_id).revoked_at == first.revoked_at  # by id too, and unchanged
    with pytest.raises(IdentityError, match="is taken"):
        reg.add("alice")  # a revoked name is not reused (its owner id stays its own)
    with pytest.raises(IdentityError, match="no identity"):
        reg.revoke("nobody")


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 101, "é", "a/b"])
def test_bad_names_and_teams_are_refused(store, name):
    reg = IdentityRegistry(store.engine)
    with pytest.raises(IdentityError, match="bad identity name"):
        reg.add(name)
    with pytest.raises(IdentityError, match="bad team name"):
        reg.add("ok", teams=[name or " "])


def test_team_scopes_make_peers_of_active_team_mates_only(store):
    reg = IdentityRegistry(store.engine)
    a, tok_a = reg.add("alice", teams=["red"])
    c, tok_c = reg.add("carol", teams=["red", "blue"])
    d, tok_d = reg.add("dave", teams=["blue"])
    e, _ = reg.add("erin", teams=["red"])
    loner, tok_l = reg.add("lone")
    reg.revoke("erin")
    peers = {name: reg.verify(tok)[1].peers for name, tok in [("a", tok_a), ("c", tok_c), ("d", tok_d), ("l", tok_l)]}
    assert peers == {
        "a": {c.identity_id},
        "c": {a.identity_id, d.identity_id},
        "d": {c.identity_id},
        "l": frozenset(),
    }
    alice = reg.verify(tok_a)[1]
    assert alice.owns(c.identity_id) and alice.owns(a.identity_id)
    assert not alice.owns(d.identity_id) and not alice.owns(e.identity_id) and not alice.owns(None)
    assert [r.name for r in reg.list(include_revoked=False)] == ["alice", "carol", "dave", "lone"]

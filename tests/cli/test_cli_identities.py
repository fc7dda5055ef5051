"""`agent-rl-sandbox identities add|list|revoke` as a human runs them: the token is printed once and
never again, a revoked token stops verifying, mistakes are one `error:` line with exit status 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.tools.identities import IdentityRegistry
from agent_rl_sandbox.tools.store import Store

runner = CliRunner()


def _run(home, *args):
    return runner.invoke(
        app, [*args, "--home", str(home)], env={"AGENT_RL_SANDBOX_APPROVER": "ops-lead", "COLUMNS": "200"}
    )


def test_add_list_revoke_round_trip(tmp_path):
    home = tmp_path / "home"
    added = _run(home, "identities", "add", "alice", "--team", "red", "--json")
    assert added.exit_code == 0, added.output
    doc = json.loads(added.output)
    token = doc["token"]
    assert token.startswith("ars_") and doc["teams"] == ["red"] and doc["created_by"] == "ops-lead"
    plain = _run(home, "identities", "add", "bob")
    assert plain.exit_code == 0 and "token (shown only now" in plain.output

    listed = _run(home, "identities", "list")
    assert listed.exit_code == 0 and "alice" in listed.output and doc["identity_id"] in listed.output
    listed_json = _run(home, "identities", "list", "--json")
    assert token not in listed.output + listed_json.output
    assert [d["name"] for d in json.loads(listed_json.output)] == ["alice", "bob"]

    store = Store(f"sqlite:///{home / 'store.db'}")
    try:
        reg = IdentityRegistry(store.engine)
        assert reg.verify(token) is not None
        revoked = _run(home, "identities", "revoke", "alice")
        assert revoked.exit_code == 0 and "revoked at" in revoked.output
        assert reg.verify(token) is None
        assert reg.get("alice").revoked_by == "ops-lead"
    finally:
        store.close()


def test_mistakes_are_one_error_line_and_exit_2(tmp_path):
    home = tmp_path / "home"
    assert _run(home, "identities", "add", "alice").exit_code == 0
    for args, words in [
        (("identities", "add", "alice"), "is taken"),
        (("identities", "add", "bad name"), "bad identity name"),
        (("identities", "add", "carol", "--team", "no spaces"), "bad team name"),
        (("identities", "revoke", "nobody"), "no identity 'nobody'"),
    ]:
        res = _run(home, *args)
        assert res.exit_code == 2, (args, res.output)
        assert words in res.output and "Next step:" in res.output and "Traceback" not in res.output

"""``agent-rl-sandbox identities add | list | revoke``: the bearer tokens of the HTTP server, for humans.

``add NAME [--team T ...]`` creates an identity and prints its token once (only its SHA-256 is
stored; a lost token is revoked and a new identity added). ``list`` shows ids, names, teams and
whether each is revoked, never a token. ``revoke NAME_OR_ID`` refuses its token from the next
request on, on every server sharing the database. Changes are recorded under
``AGENT_RL_SANDBOX_APPROVER`` or the OS user.

Exit statuses (the package's rule): 0 done; 2 bad input (a malformed or taken name, an unknown
identity, an unreachable store), with one ``error:`` line.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, group, settings, table_console

app = group("Identities of the HTTP server: add (prints a bearer token once), list, revoke.")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _registry(home: Path | None):
    from agent_rl_sandbox.tools.identities import IdentityRegistry
    from agent_rl_sandbox.tools.store import Store

    s = settings(home)
    s.home.mkdir(parents=True, exist_ok=True)
    store = Store(s.db_url)
    return s, store, IdentityRegistry(store.engine)


def _who(s) -> str:
    from agent_rl_sandbox.cli.jobs import _who as who

    return who(SimpleNamespace(settings=s))


def _doc(rec) -> dict:
    return {
        "identity_id": rec.identity_id,
        "name": rec.name,
        "teams": list(rec.teams),
        "created_at": rec.created_at,
        "created_by": rec.created_by,
        "revoked_at": rec.revoked_at,
        "revoked_by": rec.revoked_by,
    }


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A unique name (letters, digits, '.', '_', '-').")],
    team: Annotated[
        list[str] | None,
        typer.Option(
            "--team",
            metavar="TEAM",
            help="Team scope (repeatable): team mates may act on each other's sandboxes and jobs.",
        ),
    ] = None,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """Create an identity and print its bearer token (shown only this once)."""
    s, store, reg = _registry(home)
    try:
        rec, token = reg.add(name, team or (), created_by=_who(s))
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({**_doc(rec), "token": token}, indent=2))
        return
    typer.echo(f"identity {rec.name} ({rec.identity_id}) created; teams: {', '.join(rec.teams) or '-'}")
    typer.echo(f"token (shown only now; store it as a secret): {token}")


@app.command("list")
def list_identities(as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """List identities (never their tokens), oldest first."""
    _, store, reg = _registry(home)
    try:
        recs = reg.list()
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps([_doc(r) for r in recs], indent=2))
        return
    from rich.table import Table

    table = Table("id", "name", "teams", "created", "by", "revoked")
    for r in recs:
        table.add_row(r.identity_id, r.name, ", ".join(r.teams) or "-", r.created_at, r.created_by, r.revoked_at or "-")
    table_console().print(table)


@app.command("revoke")
def revoke(
    identity: Annotated[str, typer.Argument(metavar="NAME_OR_ID", help="The identity's name or id.")],
    home: HomeOpt = None,
) -> None:
    """Revoke an identity: its token is refused from the next request on (idempotent)."""
    s, store, reg = _registry(home)
    try:
        rec = reg.revoke(identity, revoked_by=_who(s))
    finally:
        store.close()
    typer.echo(f"identity {rec.name} ({rec.identity_id}) revoked at {rec.revoked_at}")

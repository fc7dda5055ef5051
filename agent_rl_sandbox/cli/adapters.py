"""``agent-rl-sandbox adapters list | show | deploy | rollback | enable | disable``: the adapter
registry, for humans.

``deploy ADAPTER`` accepts only a gate-passed candidate whose files still match their hash, and
only after the unhook dry run (disable and rollback paths against the serving backend) passed;
``rollback BEHAVIOUR`` returns to the pinned previous adapter or the base model; ``enable ADAPTER``
re-deploys a disabled one (human-only, dry run again); ``disable BEHAVIOUR`` is the kill switch
(agents have it too, as the ``adapter_disable`` tool). Changes are recorded under
``AGENT_RL_SANDBOX_APPROVER`` or the OS user.

Exit statuses (the package's rule): 0 done; 2 bad input or a refused change (unknown adapter, wrong
state, files changed, unhooks not validated, no serving backend), with one ``error:`` line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agent_rl_sandbox.cli._common import HomeOpt, fit_to_width, fold_ids, group, settings, table_console

app = group("Adapters: list, show, deploy, rollback, enable, disable (the kill switch).")

BehaviourArg = Annotated[str, typer.Argument(metavar="BEHAVIOUR", help="The behaviour the adapter serves.")]
AdapterArg = Annotated[str, typer.Argument(metavar="ADAPTER", help="The adapter id (see `adapters list`).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _services(home: Path | None):
    from agent_rl_sandbox.services import Services

    return Services.build(settings(home))


def _who(svc: Any) -> str:
    from agent_rl_sandbox.cli.jobs import _who as who

    return who(svc)


def _print(doc: dict[str, Any]) -> None:
    typer.echo(json.dumps(doc, indent=2))


@app.command("list")
def list_adapters(
    behaviour: Annotated[str | None, typer.Option("--behaviour", "--behavior", metavar="NAME")] = None,
    state: Annotated[str | None, typer.Option("--state", metavar="STATE")] = None,
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """List adapters, newest first, and the current routes."""
    from agent_rl_sandbox.schemas.adapters import AdapterListInput

    svc = _services(home)
    try:
        out = svc.adapters.adapter_list(AdapterListInput(behaviour=behaviour, state=state))  # type: ignore[arg-type]
    finally:
        svc.close()
    if as_json:
        return _print(out.model_dump(mode="json"))
    from rich.table import Table

    table = Table("adapter", "behaviour", "state", "job", "served as", "previous", "updated")
    for a in out.adapters:
        table.add_row(
            a.adapter_id,
            a.behaviour,
            a.state,
            a.job_id,
            a.served_name,
            a.previous_adapter_id or "base",
            a.updated_at[:19],
        )
    console = table_console()
    fit_to_width(
        console, table, ids=("adapter", "behaviour", "state"), optional=("updated", "previous", "served as", "job")
    )
    console.print(table)
    for b, m in sorted(out.routes.items()):
        console.print(f"route {b} -> {m}")


@app.command("show")
def show(adapter_id: AdapterArg, as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Show an adapter: paths, hashes, gate report, last unhook dry run, audit rows (--json: all of it)."""
    from dataclasses import asdict

    svc = _services(home)
    try:
        a = svc.adapters.get(adapter_id)
        doc = {"adapter": asdict(a), "events": [asdict(e) for e in svc.adapters.events(adapter_id)]}
    finally:
        svc.close()
    if as_json:
        return _print(doc)
    from rich.table import Table
    from rich.text import Text

    console = table_console()
    fields = Table(title=f"adapter {a.adapter_id}", show_header=False)
    fields.add_column("field", no_wrap=True)
    fields.add_column("value", overflow="fold")
    for key, value in doc["adapter"].items():
        shown = "-" if value is None else value if isinstance(value, str) else json.dumps(value, default=str)
        fields.add_row(key, Text(shown))  # Text: stored content is never read as markup
    console.print(fields)
    events = fold_ids(Table("at", "actor", "who", "from", "to", "reason", title="audit"), "who", "reason")
    for e in doc["events"]:
        events.add_row(
            e["at"][:19], e["actor"], Text(e["who"]), e["from_state"] or "-", e["to_state"], Text(e["reason"])
        )
    console.print(events)


def _change(home: Path | None, fn, *, verb: str, as_json: bool, behaviour: str | None = None) -> None:
    """Run the registry change ``fn(services, who)`` and report it: one human line (``verb``: what
    was done, then where the behaviour routes now), or with ``as_json`` the adapter's view and the
    whole route table."""
    from agent_rl_sandbox.tools.sandbox import task_behaviours

    svc = _services(home)
    try:
        done = fn(svc, _who(svc))
        view = svc.adapters.view(done).model_dump(mode="json") if done is not None else None
        routes = svc.adapters.routes.read()
        unknown = ""
        if done is None and behaviour is not None:  # the kill switch found nothing deployed: say so
            known = task_behaviours(svc.sandbox.tasks)
            if behaviour not in known:
                unknown = f"no task has the behaviour {behaviour!r}; known: {', '.join(known)}"
    finally:
        svc.close()
    if as_json:
        if done is None and behaviour is not None:
            note = f"note: no adapter was deployed for {behaviour!r}; it is routed to the base model"
            typer.echo(note + (f" ({unknown})" if unknown else ""), err=True)
        return _print({"adapter": view, "routes": routes})
    name = done.behaviour if done is not None else behaviour or "?"
    target = routes.get(name)
    if verb != "kill switch" and done is not None and done.state == "deployed" and target == done.served_name:
        where = f"{name} now routes to {target} (adapter {done.adapter_id})"
    else:
        where = f"{name} now routes to the base model" + (f" ({target})" if target else "")
    if verb == "kill switch":
        what = f"no adapter was deployed for {name!r}" if done is None else f"disabled {done.adapter_id}"
        typer.echo(f"kill switch: {where} ({what})")
    else:
        typer.echo(f"{verb}: {where}")
    if unknown:
        typer.echo(f"warning: {unknown} (a typo?)", err=True)


@app.command("deploy")
def deploy(adapter_id: AdapterArg, as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Deploy a gate-passed candidate (files must match; the unhook dry run must pass first)."""
    _change(home, lambda svc, who: svc.adapters.deploy(adapter_id, who), verb=f"deployed {adapter_id}", as_json=as_json)


@app.command("rollback")
def rollback(behaviour: BehaviourArg, as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Return a behaviour to its pinned previous adapter, or to the base model."""
    _change(home, lambda svc, who: svc.adapters.rollback(behaviour, who), verb="rolled back", as_json=as_json)


@app.command("enable")
def enable(adapter_id: AdapterArg, as_json: JsonOpt = False, home: HomeOpt = None) -> None:
    """Re-deploy a disabled adapter (human-only; the unhook dry run runs again)."""
    _change(home, lambda svc, who: svc.adapters.enable(adapter_id, who), verb=f"enabled {adapter_id}", as_json=as_json)


@app.command("disable")
def disable(
    behaviour: BehaviourArg,
    reason: Annotated[str, typer.Option("--reason", metavar="TEXT", help="Why (kept in the audit rows).")] = (
        "kill switch (CLI)"
    ),
    as_json: JsonOpt = False,
    home: HomeOpt = None,
) -> None:
    """The kill switch: route the behaviour to the base model now and disable its adapter."""
    _change(
        home,
        lambda svc, who: svc.adapters.disable(behaviour, who, "human", reason),
        verb="kill switch",
        as_json=as_json,
        behaviour=behaviour,
    )

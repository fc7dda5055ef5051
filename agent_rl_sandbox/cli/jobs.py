"""``agent-rl-sandbox jobs list | show | approve | reject | cancel``: the human side of training jobs.

Agents request training over MCP (``training_request``); only a human, here (or on the web page),
decides. ``show`` prints what the decision is about: the spec, its hash, the dataset validation
summary, the route's reasons, the baseline score when the worker measured one, the caps and every
state transition. ``approve JOB --hash H`` binds the approval to the hash ``show`` printed; without
``--hash`` it asks for it on a terminal and refuses when stdin is not one (a script cannot approve
blind). Decisions are recorded with who (``AGENT_RL_SANDBOX_APPROVER`` or the OS user), when and a note.

Exit statuses (the package's rule): 0 done; 2 bad input or a refused decision (an unknown job, a
wrong hash, a job that is not awaiting approval, no hash in a non-interactive shell), with one
``error:`` line saying why.
"""

from __future__ import annotations

import getpass
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agent_rl_sandbox.cli._common import HomeOpt, fit_to_width, group, settings, table_console
from agent_rl_sandbox.cli._outcome import BadInput

app = group("Training jobs: list, show, approve, reject, cancel (humans only).")

NoteOpt = Annotated[str, typer.Option("--note", metavar="TEXT", help="Recorded with the decision.")]


def _who(svc: Any) -> str:
    """The identity a decision is recorded under: the configured approver, else the OS user."""
    if svc.settings.approver:
        return svc.settings.approver
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER
        raise BadInput(
            "cannot tell who you are (no OS user name)", "set AGENT_RL_SANDBOX_APPROVER to your name"
        ) from None


def _services(home: Path | None):
    from agent_rl_sandbox.services import Services

    return Services.build(settings(home))


@app.command("list")
def list_jobs(
    state: Annotated[str | None, typer.Option("--state", metavar="STATE", help="Only jobs in this state.")] = None,
    requester: Annotated[str | None, typer.Option("--requester", metavar="WHO", help="Only this requester.")] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", min=1, help="Most jobs to list (newest first).")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print the jobs as JSON.")] = False,
    home: HomeOpt = None,
) -> None:
    """List training jobs, newest first: id, state, requester, trainer, behaviour, created, expires."""
    from rich.table import Table
    from rich.text import Text

    from agent_rl_sandbox.schemas.jobs import JobState

    if state is not None and state not in JobState.__args__:  # type: ignore[attr-defined]
        raise BadInput(f"unknown state {state!r}", f"use one of {', '.join(JobState.__args__)}")  # type: ignore[attr-defined]
    services = _services(home)
    try:
        services.jobs.repo.expire_due()
        rows, total = services.jobs.repo.list(states=[state] if state else None, requester=requester, limit=limit)
        views = [services.jobs.view(j) for j in rows]
    finally:
        services.close()
    if as_json:
        typer.echo(json.dumps({"jobs": [v.model_dump(mode="json") for v in views], "total": total}, indent=2))
        return
    table = Table("job", "state", "requester", "trainer", "behaviour", "created", "expires", "reason")
    for v in views:
        table.add_row(
            v.job_id, v.state, Text(v.requester), v.trainer, Text(v.behaviour), v.created_at[:19], v.expires_at[:19],
            Text(v.reason or ""),
        )  # fmt: skip
    console = table_console()
    # a narrow terminal drops the least needed columns rather than split an id or a behaviour
    fit_to_width(
        console, table, ids=("job", "state", "behaviour"), optional=("expires", "created", "trainer", "requester")
    )
    console.print(table)
    console.print(f"{len(views)} of {total} job(s)")


@app.command("show")
def show(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
    home: HomeOpt = None,
) -> None:
    """Show a job: spec, spec hash, dataset validation, the route's reasons, baseline, caps, events,
    and what changed since the requester's previous request for the behaviour."""
    services = _services(home)
    try:
        doc = services.job_detail(job_id)
    finally:
        services.close()
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    console = table_console()
    j = doc["job"]
    console.print(Text(f"job {j['job_id']}  state {j['state']}  requester {j['requester']}  expires {j['expires_at']}"))
    console.print(Text(f"spec hash: {doc['spec_hash']}"))
    console.print(Text("spec:\n" + json.dumps(doc["spec"], indent=2, sort_keys=True)))
    v = doc["dataset_validation"]
    if v and "store_rows_at_request" in v:
        console.print(
            f"dataset: a store selection, {v['store_rows_at_request']} rows at request time "
            "(trajectories created before then only; the worker materialises, validates and hashes them)"
        )
    elif v:
        console.print(
            Text(
                f"dataset: {v.get('verdict')}, {v.get('rows')} rows, kinds {v.get('kinds')}, "
                f"{v.get('error_count')} errors, {v.get('warning_count')} warnings, sha256 {v.get('sha256')}"
                + (f", report {v['full_report_path']}" if v.get("full_report_path") else "")
            )
        )
    else:
        console.print("dataset: a store selection (the worker materialises, validates and hashes it)")
    r = doc["route"]
    if r and "unavailable" in r:
        console.print(Text(f"route now: could not be computed ({r['unavailable']})"))
    elif r:
        console.print(Text(f"route now: {r.get('intervention')} ({r.get('adapter')})"))
        for reason in r.get("reasons") or []:
            text = reason.get("text", json.dumps(reason)) if isinstance(reason, dict) else str(reason)
            console.print(Text(f"  - {text}"))
    console.print(Text(f"baseline: {doc['baseline'] if doc['baseline'] is not None else 'unknown (not measured yet)'}"))
    console.print(Text(f"caps: {json.dumps(doc['caps'])}"))
    p = doc["previous"]
    if p:
        changed = ", ".join(c["path"] for c in p["changes"]) or "nothing"
        note = f": {p['decision_note']}" if p["decision_note"] else ""
        console.print(Text(f"previous request {p['job_id']} ({p['state']}{note}); changed since: {changed}"))
    d = doc["decision"]
    if d["by"]:
        console.print(Text(f"decided by {d['by']} at {d['at']}: {d['note'] or ''}"))
    table = Table("at", "actor", "who", "from", "to", "reason")
    for e in doc["events"]:
        table.add_row(
            e["at"][:19], e["actor"], Text(e["who"]), e["from_state"] or "-", e["to_state"], Text(e["reason"])
        )
    console.print(table)
    if j["state"] == "awaiting_approval":
        console.print(Text(f"approve with: agent-rl-sandbox jobs approve {j['job_id']} --hash {doc['spec_hash']}"))


@app.command("approve")
def approve(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job id.")],
    spec_hash: Annotated[
        str | None,
        typer.Option("--hash", metavar="HASH", help="The spec hash `jobs show` printed (asked for when omitted)."),
    ] = None,
    note: NoteOpt = "",
    home: HomeOpt = None,
) -> None:
    """Approve a job awaiting approval, bound to its spec hash; it is queued for a worker."""
    if spec_hash is None:
        if not sys.stdin.isatty():
            raise BadInput(
                "approving needs the spec hash and this shell is not interactive",
                f"run `agent-rl-sandbox jobs show {job_id}` and pass --hash HASH",
            )
        spec_hash = typer.prompt(f"spec hash of {job_id} (from `jobs show`)").strip()
    services = _services(home)
    try:
        who = _who(services.jobs)
        job = services.jobs.approve(job_id, spec_hash, who, note)
    finally:
        services.close()
    typer.echo(f"approved {job.job_id} (hash {job.approved_hash}) by {who}; state {job.state}")


@app.command("reject")
def reject(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job id.")],
    note: NoteOpt = "",
    modify: Annotated[
        bool, typer.Option("--modify", help="Reject with a suggested change (put the suggested spec in --note).")
    ] = False,
    home: HomeOpt = None,
) -> None:
    """Reject a job awaiting approval (--modify: reject, suggesting a changed spec in the note)."""
    services = _services(home)
    try:
        who = _who(services.jobs)
        job = services.jobs.reject(job_id, who, note, decision="modify" if modify else "reject")
    finally:
        services.close()
    what = "rejected, asking for a modification," if modify else "rejected"
    typer.echo(f"{what} {job.job_id} by {who}" + (f"; note: {note}" if note else ""))


@app.command("cancel")
def cancel(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job id.")],
    note: NoteOpt = "",
    home: HomeOpt = None,
) -> None:
    """Cancel a job in any non-final state (a running one is stopped by its worker)."""
    services = _services(home)
    try:
        who = _who(services.jobs)
        job = services.jobs.cancel_as_human(job_id, who, note)
    finally:
        services.close()
    typer.echo(f"cancelled {job.job_id} by {who}" + (f"; note: {note}" if note else ""))

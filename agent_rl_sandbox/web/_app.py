"""The Starlette app: one handler per page or form, each a call into the services the CLI uses and a
template. No decision is made here: approving is :meth:`JobService.approve` with the hash the page
rendered, deploying is :meth:`AdapterRegistry.deploy`, scoring is :meth:`Services.store_report`.

Routes (every one behind :class:`~._security.Guard`)::

    GET  /jobs                          the queue (filters: state, requester, behaviour)
    GET  /jobs/{id}                     a job: spec, hash, validation, route, baseline, caps, events, logs, plots
    POST /jobs/{id}/approve|reject|cancel   the human decisions (approve carries the hash shown)
    GET  /jobs/{id}/plots/{name}        a PNG the trainer wrote under the workspace's plots/
    GET  /adapters, /adapters/{id}      the registry, one adapter's gate report, unhook dry run, audit rows
    GET  /adapters/{id}/confirm/{act}   the confirmation page of deploy|enable|disable|rollback
    POST /adapters/{id}/{act}           the change (needs confirm=yes)
    GET  /trajectories, /trajectories/{id}   the list (filters) and the step viewer with scores and diffs
    GET  /evals                         a store report and a gate's verdict (gate, task, behaviour)

An :class:`~agent_rl_sandbox.tools.errors.ActionError` from a service is shown on the page it came
from, with its next step (status 409 for a refused change, 404 for an unknown id).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agent_rl_sandbox.schemas.tools import EvalScoreInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals import behaviour_stats
from agent_rl_sandbox.tools.jobs import log_tail, metrics_series, plot_bytes, plot_names
from agent_rl_sandbox.tools.sandbox._verify import operator_report_text
from agent_rl_sandbox.web import _plots
from agent_rl_sandbox.web._security import Guard, WebConfig, csrf_token

HERE = Path(__file__).parent
JOB_STATES = (
    "awaiting_approval", "approved", "queued", "running", "succeeded", "failed", "cancelled", "expired",
    "rejected", "evaluating", "gate_passed", "gate_failed",
)  # fmt: skip
ADAPTER_ACTIONS = {
    "deploy": "Deploy this candidate: its files are re-hashed and the unhook dry run must pass first.",
    "enable": "Re-enable this disabled adapter (human only): files and unhook dry run are checked again.",
    "disable": "Pull the kill switch: route the behaviour to the base model now and disable this adapter.",
    "rollback": "Roll the behaviour back to the pinned previous adapter (or the base model).",
}
MESSAGES = {
    "approved": "Approved and queued for a worker.",
    "rejected": "Rejected.",
    "cancelled": "Cancelled.",
    "deploy": "Deployed.",
    "enable": "Enabled.",
    "disable": "Disabled: the behaviour is on the base model.",
    "rollback": "Rolled back.",
}
OBS_PREVIEW = 600
"""Characters of an observation or message shown before the reader expands it."""
OBS_MAX = 64_000
"""Characters of one observation rendered at most (the full output stays in its file)."""


def _age(iso: str | None) -> str:
    if not iso:
        return "-"
    try:
        t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    s = max(0, int((datetime.now(UTC) - t).total_seconds()))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            return f"{s // n}{unit}"
    return f"{s}s"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True), auto_reload=False
    )
    env.filters.update(age=_age, pretty=_pretty, q=lambda v: quote(str(v), safe=""))
    env.globals.update(preview=OBS_PREVIEW, obs_max=OBS_MAX)
    return env


class Pages:
    """The handlers, holding the services and the page's configuration."""

    def __init__(self, services: Services, config: WebConfig):
        self.s = services
        self.config = config
        self.env = _environment()

    # -- plumbing ----------------------------------------------------------------------------------

    def render(self, request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        msg = MESSAGES.get(request.query_params.get("done", ""))
        html = self.env.get_template(name).render(
            csrf=csrf_token(self.config), approver=self.config.approver, message=msg, path=request.url.path, **ctx
        )
        return HTMLResponse(html, status_code=status)

    def error(self, request: Request, e: ActionError, status: int = 409) -> HTMLResponse:
        return self.render(request, "error.html", status=status, error=e.message, hint=e.hint)

    @staticmethod
    async def form(request: Request) -> dict[str, str]:
        return dict(parse_qsl((await request.body()).decode("utf-8", errors="replace")))

    # -- jobs --------------------------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        q = request.query_params
        state, requester, behaviour = q.get("state") or None, q.get("requester") or None, q.get("behaviour") or None

        def load():
            self.s.jobs.repo.expire_due()
            rows, total = self.s.jobs.repo.list(
                states=[state] if state else None, requester=requester, behaviour=behaviour, limit=200
            )
            return [(self.s.jobs.view(j), j.spec) for j in rows], total

        jobs, total = await run_in_threadpool(load)
        return self.render(
            request, "queue.html", jobs=jobs, total=total, states=JOB_STATES,
            filters={"state": state or "", "requester": requester or "", "behaviour": behaviour or ""},
        )  # fmt: skip

    async def job(self, request: Request, error: ActionError | None = None, status: int = 200) -> Response:
        job_id = request.path_params["job_id"]

        def load():
            doc = self.s.job_detail(job_id)
            rec = self.s.jobs.repo.get(job_id)
            return doc, rec

        try:
            doc, rec = await run_in_threadpool(load)
        except ActionError as e:
            return self.error(request, e, 404)
        logs = {name: log_tail(rec, name) for name in ("run.log", "train.log")}
        series = metrics_series(rec)
        return self.render(
            request, "job.html", status=status, d=doc, logs=logs, plots=plot_names(rec),
            metrics_svg=_plots.line_chart(series, "metrics.jsonl") if series else None,
            scores=(doc.get("scores") or None), err=error,
        )  # fmt: skip

    async def job_action(self, request: Request) -> Response:
        job_id, action = request.path_params["job_id"], request.path_params["action"]
        f = await self.form(request)
        who, note = self.config.approver, f.get("note", "")[:2000]
        jobs = self.s.jobs
        try:
            if action == "approve":
                await run_in_threadpool(jobs.approve, job_id, f.get("spec_hash", ""), who, note)
                done = "approved"
            elif action == "reject":
                decision = "modify" if f.get("modify") else "reject"
                await run_in_threadpool(lambda: jobs.reject(job_id, who, note, decision=decision))
                done = "rejected"
            elif action == "cancel":
                await run_in_threadpool(jobs.cancel_as_human, job_id, who, note)
                done = "cancelled"
            else:
                return self.render(request, "error.html", status=404, error=f"no action {action!r}", hint="")
        except ActionError as e:
            return await self.job(request, error=e, status=409)
        return RedirectResponse(f"/jobs/{quote(job_id)}?done={done}", status_code=303)

    async def plot(self, request: Request) -> Response:
        job_id, name = request.path_params["job_id"], request.path_params["name"]
        try:
            rec = await run_in_threadpool(self.s.jobs.repo.get, job_id)
        except ActionError as e:
            return self.error(request, e, 404)
        data = plot_bytes(rec, name)
        if data is None:
            return Response("no such plot", status_code=404, media_type="text/plain")
        return Response(data, media_type="image/png")

    # -- adapters ----------------------------------------------------------------------------------

    async def adapters(self, request: Request) -> Response:
        from agent_rl_sandbox.schemas.adapters import AdapterListInput

        out = await run_in_threadpool(self.s.adapters.adapter_list, AdapterListInput())
        return self.render(request, "adapters.html", adapters=out.adapters, routes=out.routes)

    async def adapter(self, request: Request, error: ActionError | None = None, status: int = 200) -> Response:
        aid = request.path_params["adapter_id"]

        def load():
            a = self.s.adapters.get(aid)
            return a, self.s.adapters.events(aid), self.s.adapters.routes.read()

        try:
            a, events, routes = await run_in_threadpool(load)
        except ActionError as e:
            return self.error(request, e, 404)
        return self.render(
            request, "adapter.html", status=status, a=a, events=events, route=routes.get(a.behaviour), err=error,
            actions=ADAPTER_ACTIONS,
        )  # fmt: skip

    async def adapter_confirm(self, request: Request) -> Response:
        aid, action = request.path_params["adapter_id"], request.path_params["action"]
        if action not in ADAPTER_ACTIONS:
            return self.render(request, "error.html", status=404, error=f"no action {action!r}", hint="")
        try:
            a = await run_in_threadpool(self.s.adapters.get, aid)
        except ActionError as e:
            return self.error(request, e, 404)
        return self.render(request, "confirm.html", a=a, action=action, what=ADAPTER_ACTIONS[action])

    async def adapter_action(self, request: Request) -> Response:
        aid, action = request.path_params["adapter_id"], request.path_params["action"]
        f = await self.form(request)
        if action not in ADAPTER_ACTIONS:
            return self.render(request, "error.html", status=404, error=f"no action {action!r}", hint="")
        if f.get("confirm") != "yes":
            return self.error(request, ActionError("not confirmed; nothing changed", "tick the confirmation box"), 400)
        reg, who = self.s.adapters, self.config.approver
        reason = f.get("reason", "")[:500] or f"{action} (web page)"

        def change():
            a = reg.get(aid)
            if action == "deploy":
                return reg.deploy(aid, who)
            if action == "enable":
                return reg.enable(aid, who)
            if action == "disable":
                return reg.disable(a.behaviour, who, "human", reason)
            return reg.rollback(a.behaviour, who)

        try:
            await run_in_threadpool(change)
        except ActionError as e:
            return await self.adapter(request, error=e, status=409)
        return RedirectResponse(f"/adapters/{quote(aid)}?done={action}", status_code=303)

    # -- trajectories ------------------------------------------------------------------------------

    async def trajectories(self, request: Request) -> Response:
        q = request.query_params
        filters = {k: q.get(k) or None for k in ("task_id", "agent_name", "behaviour", "origin", "status")}
        passed = {"yes": True, "no": False}.get(q.get("passed", ""))
        try:
            offset = max(0, int(q.get("offset", "0")))
        except ValueError:
            offset = 0
        args = {k: v for k, v in filters.items() if v is not None}
        if passed is not None:
            args["passed"] = passed
        try:
            rows, total = await run_in_threadpool(
                lambda: self.s.store.trajectories.list(limit=100, offset=offset, **args)
            )
        except (ActionError, ValueError) as e:
            msg = e if isinstance(e, ActionError) else ActionError(str(e), "fix the filter")
            return self.error(request, msg, 400)
        return self.render(
            request, "trajectories.html", rows=rows, total=total, offset=offset,
            filters={**{k: v or "" for k, v in filters.items()}, "passed": q.get("passed", "")},
        )  # fmt: skip

    async def trajectory(self, request: Request) -> Response:
        sid = request.path_params["session_id"]

        def load():
            traj = self.s.store.trajectories.get(sid)
            score, score_error = None, None
            if traj.status == "finished":
                try:
                    score = self.s.sandbox.eval_score(EvalScoreInput(session_id=sid)).report
                except ActionError as e:
                    score_error = f"{e.message} ({e.hint})"
            else:
                score_error = "still running: scored when it finishes"
            try:  # the operator's view of the hidden checks (names, arguments, details); agents get counts
                hidden = operator_report_text(self.s.settings.reports_dir, traj.session_id)
            except (OSError, ValueError) as e:
                hidden = f"(the verifier report is unreadable: {e})"
            return traj, score, score_error, self.s.sandbox.step_diffs(sid), hidden

        try:
            traj, score, score_error, diffs, hidden = await run_in_threadpool(load)
        except ActionError as e:
            return self.error(request, e, 404)
        return self.render(
            request, "trajectory.html", t=traj, score=score, score_error=score_error, diffs=diffs, hidden_checks=hidden
        )

    # -- evals -------------------------------------------------------------------------------------

    async def evals(self, request: Request) -> Response:
        q = request.query_params
        gate = q.get("gate") or "default"
        task, behaviour = q.get("task_id") or None, q.get("behaviour") or None

        def load():
            gates = sorted(self.s.evals.gates())
            return gates, self.s.store_report(gate, task_id=task, behaviour=behaviour)

        try:
            gates, report = await run_in_threadpool(load)
        except ActionError as e:
            return self.render(
                request, "evals.html", status=200, report=None, error=e, gate=gate, gates=[],
                filters={"task_id": task or "", "behaviour": behaviour or ""},
            )  # fmt: skip
        rewards = [s.reward for s in report.trajectories]
        return self.render(
            request, "evals.html", report=report, gate=gate, gates=gates, error=None,
            by_behaviour=behaviour_stats(report.trajectories),
            histogram=_plots.histogram(rewards, title=f"reward distribution ({len(rewards)} trajectories)"),
            filters={"task_id": task or "", "behaviour": behaviour or ""},
        )  # fmt: skip


def create_app(services: Services, config: WebConfig) -> Starlette:
    """The page as an ASGI app behind :class:`~._security.Guard` (token, CSRF, Host/Origin checks).
    ``services`` stays open for the app's life; the caller closes it."""
    p = Pages(services, config)
    routes = [
        Route("/", lambda request: RedirectResponse("/jobs", status_code=303)),
        Route("/jobs", p.queue),
        Route("/jobs/{job_id}", p.job),
        Route("/jobs/{job_id}/plots/{name}", p.plot),
        Route("/jobs/{job_id}/{action}", p.job_action, methods=["POST"]),
        Route("/adapters", p.adapters),
        Route("/adapters/{adapter_id}", p.adapter),
        Route("/adapters/{adapter_id}/confirm/{action}", p.adapter_confirm),
        Route("/adapters/{adapter_id}/{action}", p.adapter_action, methods=["POST"]),
        Route("/trajectories", p.trajectories),
        Route("/trajectories/{session_id}", p.trajectory),
        Route("/evals", p.evals),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(Guard, config=config)
    return app

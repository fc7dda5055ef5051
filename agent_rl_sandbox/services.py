"""The composition root: the services one process holds, built once from :class:`Settings` and
shared by the faces (the MCP adapter, the CLI, later the worker and the web page).

``tools/`` never imports this module; it is the only place that wires domain services together.
Process-wide concerns (signal handlers, ``atexit``) belong to the entry point that owns the process,
which opts in with :meth:`Services.close_at_exit`; building services installs none of them.
"""

from __future__ import annotations

import atexit
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from agent_rl_sandbox.settings import Settings

if TYPE_CHECKING:  # imported in Services.build: importing this module stays light (serve's start-up)
    from agent_rl_sandbox.schemas.reward import EvalReport
    from agent_rl_sandbox.tools.adapters import AdapterRegistry, ServingBackend
    from agent_rl_sandbox.tools.datasets import DatasetService
    from agent_rl_sandbox.tools.evals import EvalService
    from agent_rl_sandbox.tools.jobs import JobRecord, JobService
    from agent_rl_sandbox.tools.routes import RouteService
    from agent_rl_sandbox.tools.sandbox import SandboxService
    from agent_rl_sandbox.tools.store import Store
    from agent_rl_sandbox.tools.trajectories._service import TrajectoryService


@dataclass
class Services:
    settings: Settings
    store: Store
    """The database: ``store.trajectories``, ``store.sandboxes``, ``store.hook_events``."""
    sandbox: SandboxService
    evals: EvalService
    """Scoring from the store and eval gates."""
    trajectories: TrajectoryService
    """Self-logged trajectories, listing, imports and training-data exports."""
    datasets: DatasetService
    """Post-training data validation."""
    routes: RouteService
    """Training-route recommendation from the store's evidence."""
    jobs: JobService
    """Training jobs: requests (agents), decisions (humans), the repository the worker claims from."""
    adapters: AdapterRegistry
    """Adapter registry: candidates, human deploys behind unhooks, the kill switch (anyone)."""
    _exit_hook: object = field(default=None, repr=False)

    @classmethod
    def build(cls, settings: Settings | None = None) -> Services:
        """Open the store (creating tables) and load tasks. Raises on an unreachable database."""
        from agent_rl_sandbox.tools.adapters import AdapterRegistry, RouteTable
        from agent_rl_sandbox.tools.datasets import DatasetService
        from agent_rl_sandbox.tools.evals import EvalService
        from agent_rl_sandbox.tools.jobs import JobRepository, JobService
        from agent_rl_sandbox.tools.routes import RouteService
        from agent_rl_sandbox.tools.sandbox import SandboxService
        from agent_rl_sandbox.tools.store import Store
        from agent_rl_sandbox.tools.trajectories._service import TrajectoryService

        settings = settings or Settings.from_env()
        ensure_home(settings)
        store = Store(settings.db_url)
        sandbox = SandboxService(settings, store)

        def task_info(task_id: str) -> tuple[str | None, str | None] | None:
            task = sandbox.tasks.get(task_id)
            return (task.config.behaviour, task.config.split) if task is not None else None

        evals = EvalService(settings, store, sandbox)
        trajectories = TrajectoryService(settings, store.trajectories, task_info)
        datasets = DatasetService(settings)
        return cls(
            settings=settings, store=store, sandbox=sandbox, evals=evals,
            trajectories=trajectories,
            datasets=datasets,
            routes=RouteService(store.trajectories, sandbox.tasks),
            jobs=JobService(
                settings, JobRepository(store.engine), datasets, evals.gates, sandbox.tasks,
                store_rows=lambda selection: _store_rows(trajectories, selection),
            ),
            adapters=AdapterRegistry(
                store.engine, RouteTable(settings.adapters_dir / "routes.json"),
                lambda: _serving_backend(settings), base_name=settings.vllm_base_model,
            ),
        )  # fmt: skip

    def job_detail(self, job_id: str) -> dict[str, Any]:
        """Everything a human decides a job on (``jobs show`` and the web page's job view): the job's
        view, its spec and spec hash, the dataset validation summary, the route recommended now for
        its behaviour (``{"unavailable": why}`` when it cannot be computed), the baseline and the
        whole of ``scores.json`` (``None`` until a stage writes it), the caps, the decision, every
        transition, and ``previous``: the requester's previous request for the behaviour with its
        state, decision note and the fields the spec changed since (``None`` for a first request).
        Raises :class:`ActionError` for an unknown job."""
        from agent_rl_sandbox.tools.jobs import read_scores

        self.jobs.repo.expire_due()
        job = self.jobs.repo.get(job_id)
        scores = read_scores(job)
        return {
            "job": self.jobs.view(job).model_dump(mode="json"),
            "spec_hash": job.spec_hash,
            "spec": job.spec,
            "dataset_validation": job.validation,
            "route": self._route_now(job.behaviour),
            "baseline": scores.get("baseline") if scores else None,
            "scores": scores,
            "caps": job.spec.get("caps"),
            "decision": {"by": job.decided_by, "at": job.decided_at, "note": job.decision_note},
            "events": [e.model_dump(mode="json") for e in self.jobs.events(job_id)],
            "previous": self._previous(job),
        }

    def _previous(self, job: JobRecord) -> dict[str, Any] | None:
        from agent_rl_sandbox.tools.jobs import spec_changes

        prev = self.jobs.previous_request(job)
        if prev is None:
            return None
        return {
            "job_id": prev.job_id, "state": prev.state, "decided_by": prev.decided_by,
            "decision_note": prev.decision_note, "changes": spec_changes(prev.spec, job.spec),
        }  # fmt: skip

    def _route_now(self, behaviour: str) -> dict[str, Any]:
        from agent_rl_sandbox.schemas.routes import RouteRecommendInput
        from agent_rl_sandbox.tools.errors import ActionError

        try:
            rec = self.routes.recommend(RouteRecommendInput(behaviour=behaviour))
        except ActionError as e:
            return {"unavailable": e.message}
        except Exception as e:  # noqa: BLE001 - the route is context for a decision, never a reason to fail it
            return {"unavailable": f"{type(e).__name__}: {e}"}
        doc = rec.model_dump(mode="json")
        return {k: doc.get(k) for k in ("intervention", "adapter", "reasons", "prerequisites_missing") if k in doc}

    def store_report(
        self, gate: str | None = None, *, task_id: str | None = None, behaviour: str | None = None
    ) -> EvalReport:
        """Score the store's finished trajectories (filtered by task and behaviour) and evaluate
        ``gate`` on them: ``agent-rl-sandbox score store --gate NAME`` as a function
        (:func:`~agent_rl_sandbox.tools.evals.score_and_gate`). Raises
        :class:`~agent_rl_sandbox.tools.evals.EvalInputError` for an unknown gate or nothing to score."""
        from agent_rl_sandbox.tools.evals import score_and_gate

        return score_and_gate(
            "store", home=self.settings.home, gate=gate, task_id=task_id,
            score_store=lambda ids, task: self.evals.score_store(session_ids=ids, task_id=task, behaviour=behaviour),
        )  # fmt: skip

    def bind(self, method: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
        """``method`` (an unbound domain method such as ``SandboxService.reset``) bound to the
        service of its class held here. Raises ``LookupError`` when no held service defines it."""
        for f in fields(self):
            svc = getattr(self, f.name)
            if getattr(type(svc), method.__name__, None) is method:
                return getattr(svc, method.__name__)
        raise LookupError(f"no service of {type(self).__name__} defines {method.__qualname__}")

    def close_at_exit(self) -> None:
        """For entry points that own their process (``serve``, ``worker``, ``ui``): close these
        services at interpreter exit, and turn SIGTERM/SIGHUP into ``SystemExit`` (only where the
        signal still has its default action, and only from the main thread) so that exit path runs
        and no sandbox command outlives the process. Idempotent; :meth:`close` unregisters it."""
        if self._exit_hook is not None:
            return
        self._exit_hook = self.close
        atexit.register(self.close)
        exit_on_term_signals()

    def close(self) -> None:
        """Kill live sandbox commands, then release the database connections. Safe to call twice."""
        self.sandbox.close()
        self.store.close()
        if self._exit_hook is not None:
            atexit.unregister(self.close)
            self._exit_hook = None


def ensure_home(settings: Settings) -> None:
    """Create ``settings.home`` (and its parents) if missing. Raises :class:`ActionError` naming the
    folder when it cannot be made (a file there, a read-only or pseudo filesystem): one clear line,
    not a traceback."""
    try:
        settings.home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from agent_rl_sandbox.tools.errors import ActionError

        raise ActionError(
            f"cannot use {settings.home} as the home folder: {e.strerror}",
            "set AGENT_RL_SANDBOX_HOME (or --home) to a folder you can create and write",
        ) from None


def exit_on_term_signals() -> None:
    """Turn SIGTERM/SIGHUP into ``SystemExit`` (so ``atexit`` hooks run), only where the signal still
    has its default action and only from the main thread (elsewhere: nothing). Idempotent."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _exit_on_signal)
        except (ValueError, OSError):  # not the main interpreter, or unsupported here
            pass


def _exit_on_signal(signum: int, _frame: object) -> None:
    """SIGTERM/SIGHUP: exit through ``SystemExit`` so the ``atexit`` close runs."""
    raise SystemExit(128 + signum)


def _store_rows(trajectories: TrajectoryService, selection: dict[str, Any]) -> tuple[int, str]:
    """How many rows a job's store selection exports now, and for none why: the worker's export
    (:func:`~agent_rl_sandbox.tools.trajectories._export.store_selection_options`) into a scratch
    folder that is deleted afterwards."""
    import tempfile
    from pathlib import Path

    from agent_rl_sandbox.tools.errors import ActionError
    from agent_rl_sandbox.tools.trajectories._export import store_selection_options

    with tempfile.TemporaryDirectory(prefix="ars-store-rows-") as scratch:
        try:
            res = trajectories.export_to(store_selection_options(selection), Path(scratch))
        except ActionError as e:
            return 0, e.message
    return res.manifest.rows, "" if res.manifest.rows else "the export selected nothing"


def _serving_backend(settings: Settings) -> ServingBackend | None:
    """The configured serving backend (the vLLM server), or ``None``."""
    from agent_rl_sandbox.tools.adapters import VllmBackend

    if settings.vllm_url and settings.vllm_base_model:
        return VllmBackend(settings.vllm_url, settings.vllm_base_model)
    return None

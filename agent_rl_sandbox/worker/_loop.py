"""The worker loop: claim an approved job, run its stages, record the outcome; never run a job twice.

One pass (:meth:`Worker.run_once`): expire requests past their approval deadline, recover jobs whose
worker lost its lease (``failed``, reason ``worker_lost``; their leftover processes on this machine
are killed by the job marker), then claim the oldest ``queued`` job (a lease; see
:meth:`~agent_rl_sandbox.tools.jobs.JobRepository.claim`) and run it:

1. workspace ``<home>/jobs/<job id>/`` with ``job.json`` (spec, hashes, approval, dataset);
   a store selection is materialised there (``dataset/``) and hashed first, and a local base model
   folder is digested again: one that no longer matches the approved ``base_model_sha256`` fails
   the job (``base_model_changed``) before any stage runs.
2. stages in :data:`~._config.STAGE_ORDER`, each with :func:`~._runner.run_stage`, while a heartbeat
   thread renews the lease every ``lease_s / 3`` seconds. A heartbeat refused (the job was cancelled
   or recovered by another worker) stops the running stage.
3. ``validate``, ``baseline``, ``train`` run in ``running``; then ``succeeded`` → ``evaluating``;
   ``post_eval`` and ``gate`` run in ``evaluating``. The gate stage's exit status is the verdict:
   0 ``gate_passed``, 1 ``gate_failed``, anything else ``failed``.
4. a stage that is not configured fails the job with ``stage_not_installed:NAME``; a stage that exits
   non-zero ``stage_failed:NAME: exit N`` (followed by ``: <reason>`` when the stage wrote
   ``<stage>_error.json``); past its timeout ``stage_timeout:NAME``.
5. one row in ``<home>/jobs/results.csv`` for every job this worker finished (scores from
   ``scores.json``: ``baseline``, ``final``).
6. on ``gate_passed`` the ``on_gate_passed`` callback (the adapter registry's candidate
   registration) is called with the job and its workspace.

Claims take only ``queued`` jobs and every move is a conditional transition, so a restarted worker
never runs a job twice and two workers never run one job.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_rl_sandbox.tools.jobs import JobRecord, JobRepository, TransitionRefused
from agent_rl_sandbox.tools.jobs._model_digest import ModelDigestError, model_digest
from agent_rl_sandbox.worker._config import STAGE_ORDER, WorkerConfig
from agent_rl_sandbox.worker._reap import become_subreaper, clock_ticks_now, kill_job_processes
from agent_rl_sandbox.worker._results import append_result
from agent_rl_sandbox.worker._runner import StageResult, run_stage
from agent_rl_sandbox.worker._workspace import JobWorkspace

log = logging.getLogger(__name__)

Materialiser = Callable[[dict[str, Any], Path], Path]
"""``(store selection dict, out folder) -> data file``: exports a store selection to a file."""


def _base_model_changed(spec: dict[str, Any]) -> str | None:
    """Why the spec's local base-model folder no longer matches the digest the approval bound
    (``base_model_sha256``), or ``None`` (it matches, or the model is a registry name)."""
    want = spec.get("base_model_sha256")
    if want is None:
        return None
    try:
        got = model_digest(Path(str(spec.get("base_model"))).resolve())
    except (ModelDigestError, OSError) as e:
        return f"cannot read {spec.get('base_model')}: {e}"
    if got != want:
        return f"{spec.get('base_model')} holds other files than at approval ({got} != {want}); request the job again"
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_worker_id() -> str:
    """``host:pid:random``: unique per worker process."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Heartbeat(threading.Thread):
    def __init__(self, repo: JobRepository, job_id: str, worker_id: str, lease_s: float):
        super().__init__(daemon=True, name=f"heartbeat-{job_id}")
        self.repo, self.job_id, self.worker_id, self.lease_s = repo, job_id, worker_id, lease_s
        self.stage: str | None = None
        self.lost = threading.Event()
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                ok = self.repo.heartbeat(self.job_id, self.worker_id, self.lease_s, stage=self.stage)
            except Exception:  # noqa: BLE001 - a database hiccup: try again next beat, the lease is still live
                log.exception("heartbeat of %s failed", self.job_id)
                continue
            if not ok:
                self.lost.set()
                return

    def stop(self) -> None:
        self._stop.set()


class Worker:
    """Claims and runs jobs from ``repo`` with the operator's ``config``.

    ``jobs_dir`` is where workspaces and ``results.csv`` live; ``lease_s`` the claim's lease;
    ``materialise`` exports a store selection (``None``: such jobs fail with ``no_materialiser``);
    ``on_gate_passed(job, workspace)`` is called for each job that passed its gate."""

    def __init__(
        self,
        repo: JobRepository,
        config: WorkerConfig,
        jobs_dir: Path,
        *,
        worker_id: str | None = None,
        lease_s: float = 60.0,
        materialise: Materialiser | None = None,
        on_gate_passed: Callable[[JobRecord, JobWorkspace], None] | None = None,
        base_env: dict[str, str] | None = None,
        subreaper: bool = True,
    ):
        self.repo = repo
        self.config = config
        self.jobs_dir = jobs_dir
        self.worker_id = worker_id or default_worker_id()
        self.lease_s = lease_s
        self.materialise = materialise
        self.on_gate_passed = on_gate_passed
        self.base_env = base_env
        if subreaper:  # orphans of stages reparent to this process (off only for in-process tests)
            become_subreaper()

    # -- the loop -------------------------------------------------------------------------------

    def housekeeping(self) -> None:
        """Expire overdue requests; fail jobs whose lease expired and kill their local leftovers."""
        self.repo.expire_due()
        for job_id in self.repo.recover_lost():
            log.warning("job %s: worker lost, marked failed", job_id)
            kill_job_processes(job_id, pgid=None, since=clock_ticks_now() + 10**9, grace_s=1.0)

    def run_once(self) -> JobRecord | None:
        """Housekeeping, then claim and run one job. Returns the job as it ended, or ``None`` when
        nothing was claimable (nothing queued, or on SQLite another worker holds the lock)."""
        self.housekeeping()
        job = self.repo.claim(self.worker_id, self.lease_s)
        if job is None:
            return None
        return self.run_job(job)

    def run(self, *, once: bool = False, max_jobs: int | None = None, poll_s: float = 2.0) -> int:
        """Run jobs until ``max_jobs`` have run, or (``once``) until nothing is claimable; otherwise
        forever, polling every ``poll_s`` seconds. Returns how many jobs ran. The SQLite worker lock
        is released on the way out."""
        ran = 0
        try:
            while max_jobs is None or ran < max_jobs:
                if self.run_once() is not None:
                    ran += 1
                    continue
                if once:
                    break
                time.sleep(poll_s)
        finally:
            self.repo.release_worker_lock(self.worker_id)
        return ran

    # -- one job --------------------------------------------------------------------------------

    def _finish(self, job_id: str, to: str, reason: str, *, expect_from: str) -> str:
        try:
            return self.repo.transition(job_id, to, "worker", reason, expect_from=expect_from, who=self.worker_id).state
        except TransitionRefused as exc:  # cancelled or recovered meanwhile: the other side's word stands
            return exc.state or self.repo.get(job_id).state

    def _job_doc(self, job: JobRecord, dataset: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "job_id": job.job_id,
            "spec": job.spec,
            "spec_hash": job.spec_hash,
            "approval": {
                "hash": job.approved_hash,
                "by": job.decided_by,
                "at": job.decided_at,
                "note": job.decision_note,
            },
            "dataset": dataset,
            "worker_id": self.worker_id,
        }

    def _dataset(self, job: JobRecord, ws: JobWorkspace) -> dict[str, Any]:
        ds = job.spec.get("dataset") or {}
        if ds.get("kind") == "file":
            return {"path": ds.get("path"), "sha256": ds.get("sha256")}
        if self.materialise is None:
            raise RuntimeError("no_materialiser: this worker cannot export store selections")
        data = self.materialise(ds, ws.root / "dataset")
        return {"path": str(data), "sha256": _sha256(data), "selection": ds}

    def run_job(self, job: JobRecord) -> JobRecord:
        """Run a claimed (``running``) job to its end; see the module docstring. Returns the job."""
        started = time.time()
        ws = JobWorkspace.create(self.jobs_dir, job.job_id, self._job_doc(job, None))
        beat = _Heartbeat(self.repo, job.job_id, self.worker_id, self.lease_s)
        beat.start()
        state, results = "running", {}
        try:
            self.repo.heartbeat(job.job_id, self.worker_id, self.lease_s, workspace=str(ws.root))
            try:
                ws = JobWorkspace.create(self.jobs_dir, job.job_id, self._job_doc(job, self._dataset(job, ws)))
            except Exception as exc:  # noqa: BLE001 - any export failure fails this job, not the worker
                ws.log(f"dataset: {exc}")
                state = self._finish(job.job_id, "failed", f"dataset_unavailable: {exc}", expect_from="running")
                return self._done(job, ws, state, started, results)
            changed = _base_model_changed(job.spec)
            if changed is not None:
                ws.log(f"base model: {changed}")
                state = self._finish(job.job_id, "failed", f"base_model_changed: {changed}", expect_from="running")
                return self._done(job, ws, state, started, results)
            state = self._stages(job, ws, beat, results)
        except BaseException as exc:  # the worker is stopping (SIGTERM, Ctrl-C): fail the job now
            current = self.repo.get(job.job_id).state
            if current in ("running", "evaluating"):
                self._finish(job.job_id, "failed", f"worker_stopped: {type(exc).__name__}", expect_from=current)
            raise
        finally:
            beat.stop()
        return self._done(job, ws, state, started, results)

    def _stages(self, job: JobRecord, ws: JobWorkspace, beat: _Heartbeat, results: dict[str, StageResult]) -> str:
        state = "running"
        env = {**(self.base_env if self.base_env is not None else os.environ), **ws.env()}
        for name in STAGE_ORDER:
            if name == "post_eval":
                state = self._finish(job.job_id, "succeeded", "training stages done", expect_from="running")
                if state != "succeeded":
                    return state
                state = self._finish(job.job_id, "evaluating", "post-training evaluation", expect_from="succeeded")
                if state != "evaluating":
                    return state
            cmd = self.config.stages.get(name)
            if cmd is None:
                ws.log(f"stage {name}: not installed (no [stages.{name}] in {self.config.source})")
                return self._finish(job.job_id, "failed", f"stage_not_installed:{name}", expect_from=state)
            beat.stage = name
            try:
                self.repo.heartbeat(job.job_id, self.worker_id, self.lease_s, stage=name)
            except Exception:  # noqa: BLE001 - the heartbeat thread retries
                log.exception("stage heartbeat of %s failed", job.job_id)
            (ws.root / f"{name}_error.json").unlink(missing_ok=True)  # only this run's reason may explain it
            ws.log(f"stage {name}: start {list(cmd.argv)}")
            try:
                res = run_stage(
                    name, cmd.argv, job_id=job.job_id, cwd=ws.root, log_path=ws.run_log, timeout_s=cmd.timeout_s,
                    grace_s=self.config.grace_s, env=env, should_cancel=beat.lost.is_set,
                )  # fmt: skip
            except OSError as exc:
                ws.log(f"stage {name}: cannot start: {exc}")
                return self._finish(
                    job.job_id, "failed", f"stage_failed:{name}: cannot start ({exc})", expect_from=state
                )
            results[name] = res
            ws.log(
                f"stage {name}: {res.status} exit={res.exit_code} {res.duration_s:.2f}s killed={len(res.killed_pids)}"
            )
            if res.status == "cancelled":
                return self.repo.get(job.job_id).state  # cancelled or recovered by someone else
            if res.status == "timeout":
                return self._finish(job.job_id, "failed", f"stage_timeout:{name}", expect_from=state)
            if name == "gate" and res.exit_code in (0, 1):
                verdict = "gate_passed" if res.exit_code == 0 else "gate_failed"
                return self._finish(job.job_id, verdict, f"gate stage exit {res.exit_code}", expect_from=state)
            if res.status != "ok":
                why = ws.stage_error(name)  # the stage's own reason (<stage>_error.json), when it wrote one
                reason = f"stage_failed:{name}: exit {res.exit_code}" + (f": {why}" if why else "")
                return self._finish(job.job_id, "failed", reason, expect_from=state)
        return state  # not reached: gate always decides

    def _done(self, job: JobRecord, ws: JobWorkspace, state: str, started: float, results: dict) -> JobRecord:
        final = self.repo.get(job.job_id)
        scores = ws.read_scores()
        baseline, score = scores.get("baseline"), scores.get("final", scores.get("best"))
        numeric = isinstance(baseline, int | float) and isinstance(score, int | float)
        try:
            dataset_hash = _dataset_hash(ws)
        except (OSError, ValueError, AttributeError):
            dataset_hash = ""
        append_result(
            self.jobs_dir / "results.csv",
            {
                "job_id": job.job_id, "created": job.created_at, "started": job.started_at, "finished": final.finished_at,
                "route": job.spec.get("route"), "trainer": job.trainer, "base_model": job.spec.get("base_model"),
                "dataset_hash": dataset_hash, "baseline": baseline, "final_score": score,
                "improvement": round(score - baseline, 6) if numeric else None,
                "gate_verdict": final.state if final.state in ("gate_passed", "gate_failed") else None,
                "duration_s": round(time.time() - started, 3), "status": final.state, "workspace": str(ws.root),
            },
        )  # fmt: skip
        ws.log(f"job {job.job_id}: {final.state} ({final.reason})")
        if final.state == "gate_passed" and self.on_gate_passed is not None:
            try:
                self.on_gate_passed(final, ws)
            except Exception as exc:  # noqa: BLE001 - registration failure is logged, the job outcome stands
                log.exception("registering the adapter of %s failed", job.job_id)
                ws.log(f"adapter registration failed: {exc}")
        return final


def _dataset_hash(ws: JobWorkspace) -> str:
    doc = json.loads(ws.job_json.read_text(encoding="utf-8"))
    return str(((doc.get("dataset") or {}).get("sha256")) or "")

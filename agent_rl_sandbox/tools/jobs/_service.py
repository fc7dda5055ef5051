"""The job service: what the faces call. Agents request, read and cancel their own jobs; humans
approve, reject and cancel; nobody else moves a job out of ``awaiting_approval``.

Agent-facing (the MCP tools ``training_request``, ``training_status``, ``training_list``,
``training_cancel``): :meth:`JobService.request`, :meth:`~JobService.status`, :meth:`~JobService.list`,
:meth:`~JobService.cancel`. Every one is a few indexed queries: none waits for training.

Human-only (the ``jobs`` CLI, later the web page; no MCP tool is bound to them):
:meth:`JobService.approve`, :meth:`~JobService.reject`, :meth:`~JobService.cancel_as_human`.

A request is validated before it is stored, and each refusal is an :class:`ActionError` naming the
field and what to do:

- ``base_model``: a name in the operator's model registry (``Settings.models``) or an absolute local
  folder holding ``config.json`` and tokenizer files (a venv, ``/usr`` or a folder inside a sandbox is
  refused); a folder's content digest goes into the spec (``base_model_sha256``) and the worker
  checks it again before training (``base_model_changed``).
- ``hyperparameters``: only names in :data:`~agent_rl_sandbox.schemas.jobs.KNOWN_HYPERPARAMETERS` for
  the trainer (the list the trainers apply), with their types; ``push_to_hub``, ``output_dir``,
  ``report_to``, ``trust_remote_code``... are refused with the accepted names.
- ``dataset`` (a file): under ``<home>/exports`` or the operator's data folders, never under
  ``<home>/sandboxes`` (an agent's own working copy); validated by
  :class:`~agent_rl_sandbox.tools.datasets.DatasetService` (any error blocks the request and the
  message gives the full report's path); its SHA-256 is taken before and after validation (a file
  that changed meanwhile is refused) and must equal a ``sha256`` the requester gave. A store selection
  names a known behaviour, is cut off at the request time (``created_before``) and must export at
  least one row then (counted by the worker's own export, kept as ``store_rows_at_request`` for the
  approver); the worker materialises and hashes it.
- ``gate.name``: a gate ``eval_gate`` knows; ``gate.behaviour``: a behaviour with held-out variants.
- ``caps``: within ``Settings.job_max_steps``, ``job_max_timeout_s``, ``job_max_gpu_hours``; a
  ``hyperparameters.max_steps`` within ``caps.max_steps``.

The stored spec is its canonical form and hash (:func:`~._hash.canonical_spec`); the job enters
``awaiting_approval`` with an expiry ``Settings.job_expiry_hours`` ahead. Fail closed: approving needs
the exact hash (the one ``jobs show`` prints) and the stored spec must still hash to it; an expired,
cancelled or rejected job cannot be approved; two racing approvals approve once (the repository's
conditional update); an approved job is queued at once (actor ``system``) and the worker re-checks
the hash at claim time (``spec_changed``). Requests past their expiry are moved to ``expired`` lazily
by every call of this service (and by the worker).

Requester identity: every agent-facing method takes a :class:`~agent_rl_sandbox.tools._caller.Caller`,
made by the face (the MCP adapter passes the session's ``Caller.agent("mcp:<token>")``, never anything
the client sends). The job's ``requester`` is ``caller.owner_id``; an agent sees, lists and cancels
only jobs it requested (another agent's job reads as unknown); the operator (CLI, scripts) sees all.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.jobs import (
    FINAL_STATES,
    JobEventView,
    JobSpec,
    JobView,
    TrainingCancelInput,
    TrainingCancelOutput,
    TrainingListInput,
    TrainingListOutput,
    TrainingRequestOutput,
    TrainingStatusInput,
    TrainingStatusOutput,
    hyperparameter_problem,
)
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.datasets import DatasetService, DatasetValidateInput
from agent_rl_sandbox.tools.datasets._open import open_no_follow
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.jobs._hash import canonical_spec, spec_hash
from agent_rl_sandbox.tools.jobs._model_digest import ModelDigestError, model_digest
from agent_rl_sandbox.tools.jobs._repository import JobRecord, JobRepository, TransitionRefused, later
from agent_rl_sandbox.tools.sandbox._task import task_behaviours
from agent_rl_sandbox.tools.store import utcnow

MODEL_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
"""A model folder holds one of these next to its ``config.json``."""
WORKSPACE_FILES = ("job.json", "run.log", "train.log", "metrics.jsonl", "scores.json")
"""Files of a job workspace (written by the worker) that status lists when they exist."""

_SHOW = "`agent-rl-sandbox jobs show JOB`"


def file_sha256(path: Path) -> str:
    """SHA-256 hex digest of the regular file at the absolute, resolved ``path``, read without
    following any symbolic link (:func:`~agent_rl_sandbox.tools.datasets._open.open_no_follow`, as
    the dataset validator reads it). Raises ``OSError`` when unreadable or a link is on the path."""
    h = hashlib.sha256()
    with open_no_follow(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _field_error(field: str, problem: str, hint: str) -> ActionError:
    return ActionError(f"training_request field `{field}`: {problem}", hint)


class JobService:
    """Training jobs for the faces. ``gates`` returns the known eval gates by name (may raise
    :class:`ActionError`); ``tasks`` maps task ids to tasks (``.config.behaviour``,
    ``.config.split``)."""

    def __init__(
        self,
        settings: Settings,
        repo: JobRepository,
        datasets: DatasetService,
        gates: Callable[[], Mapping[str, Any]],
        tasks: Mapping[str, Any],
        store_rows: Callable[[dict[str, Any]], tuple[int, str]] | None = None,
    ):
        self.settings = settings
        self.repo = repo
        self.datasets = datasets
        self.gates = gates
        self.tasks = tasks
        self.store_rows = store_rows
        """``store_rows(selection)``: the rows a canonical store selection exports now and, for 0, why
        (the worker's own export, run into a scratch folder); ``None``: not counted."""

    # -- agent-facing -------------------------------------------------------------------------------

    def request(self, spec: JobSpec, caller: Caller = OPERATOR) -> TrainingRequestOutput:
        """Validate ``spec`` and store it as a job ``awaiting_approval`` for ``caller``. Raises
        :class:`ActionError` naming the field at fault (see the module docstring)."""
        self.repo.expire_due()
        model_sha = self._check_base_model(spec.base_model)
        self._check_hyperparameters(spec)
        self._check_gate(spec)
        self._check_caps(spec)
        validation: dict[str, Any] | None = None
        sha: str | None = None
        if spec.dataset.kind == "file":
            sha, validation = self._check_dataset_file(spec)
        elif spec.dataset.behaviour is not None and not self._behaviour_known(spec.dataset.behaviour):
            raise _field_error(
                "dataset.behaviour",
                f"unknown behaviour {spec.dataset.behaviour!r}",
                f"pass one of: {', '.join(self._behaviours())} (list_tasks)",
            )
        canon = canonical_spec(
            spec,
            cwd=Path.cwd(),
            dataset_sha256=sha,
            base_model_sha256=model_sha,
            store_created_before=utcnow() if spec.dataset.kind == "store" else None,
        )
        if spec.dataset.kind == "store" and self.store_rows is not None:
            rows, why = self.store_rows(canon["dataset"])
            if rows == 0:
                raise _field_error(
                    "dataset",
                    f"the store selection exports no rows now ({why})",
                    "finish and score more episodes of the behaviour with sandbox_finish (route_recommend says how "
                    "many a route needs), or widen the selection",
                )
            validation = {"store_rows_at_request": rows}
        job = self.repo.add(
            requester=caller.owner_id,
            actor="human" if caller.operator else "agent",
            spec=canon,
            spec_hash=spec_hash(canon),
            expires_at=later(self.settings.job_expiry_hours * 3600),
            trainer=spec.trainer,
            behaviour=spec.gate.behaviour,
            validation=validation,
            reason=f"requested: {spec.reason}"[:2000],
        )
        return TrainingRequestOutput(
            job=self.view(job),
            spec=canon,
            dataset_validation=validation,
            next_step=(
                f"wait for a human to approve it out of band (they run `agent-rl-sandbox jobs show {job.job_id}` "
                f"and `jobs approve {job.job_id} --hash {job.spec_hash}`); poll training_status. It expires at "
                f"{job.expires_at} if nobody approves it"
            ),
        )

    def status(self, inp: TrainingStatusInput, caller: Caller = OPERATOR) -> TrainingStatusOutput:
        """The job and its events. Raises :class:`ActionError` for an unknown job or another
        requester's job."""
        self.repo.expire_due()
        job = self._own(inp.job_id, caller)
        return TrainingStatusOutput(job=self.view(job), events=self.events(job.job_id))

    def list(self, inp: TrainingListInput, caller: Caller = OPERATOR) -> TrainingListOutput:
        """``caller``'s jobs, newest first, filtered and paginated."""
        self.repo.expire_due()
        page, total = self.repo.list(
            states=[inp.state] if inp.state else None,
            requester=None if caller.operator else caller.owner_id,
            behaviour=inp.behaviour,
            limit=inp.limit,
            offset=inp.offset,
        )
        nxt = inp.offset + len(page)
        return TrainingListOutput(
            jobs=[self.view(j) for j in page], total=total, next_offset=nxt if nxt < total else None
        )

    def cancel(self, inp: TrainingCancelInput, caller: Caller = OPERATOR) -> TrainingCancelOutput:
        """Cancel ``caller``'s own job in any non-final state (a running one is stopped by its worker
        at its next heartbeat). Raises :class:`ActionError` for another requester's job or a final one."""
        self.repo.expire_due()
        job = self._own(inp.job_id, caller)
        done = self._cancel(job, "human" if caller.operator else "agent", caller.owner_id, inp.reason)
        note = "cancelled" + (
            "; its worker stops the running stage at the next heartbeat"
            if job.state in ("running", "evaluating")
            else ""
        )
        return TrainingCancelOutput(job=self.view(done), note=note)

    # -- human-only ---------------------------------------------------------------------------------

    def approve(self, job_id: str, approved_hash: str, who: str, note: str = "") -> JobRecord:
        """A human approves ``job_id``, bound to ``approved_hash`` (the spec hash ``jobs show``
        printed); the job is queued for a worker. Refused (:class:`ActionError`) when the hash differs,
        the stored spec no longer hashes to it, the job is not awaiting approval (expired, cancelled,
        rejected, already approved) or a concurrent decision won."""
        self.repo.expire_due()
        job = self.repo.get(job_id)
        if job.state != "awaiting_approval":
            raise ActionError(
                f"job {job_id} is {job.state}; only a job awaiting approval can be approved",
                "nothing to do" if job.state not in ("expired", "cancelled", "rejected")
                else "ask the requester for a new training_request",
            )  # fmt: skip
        if approved_hash.strip().lower() != job.spec_hash:
            raise ActionError(
                f"hash {approved_hash!r} is not job {job_id}'s spec hash; nothing was approved",
                f"run {_SHOW.replace('JOB', job_id)}, read the spec, and pass the hash it prints",
            )
        if spec_hash(job.spec) != job.spec_hash:
            raise ActionError(
                f"job {job_id}'s stored spec no longer matches its hash (changed after the request); refused",
                "reject it and ask for a new training_request",
            )
        now = utcnow()
        try:
            self.repo.transition(
                job_id, "approved", "human", f"approved by {who}" + (f": {note}" if note else ""),
                expect_from="awaiting_approval", who=who, approved_hash=job.spec_hash,
                decided_by=who, decided_at=now, decision_note=note or None,
            )  # fmt: skip
        except TransitionRefused as e:
            raise ActionError(
                f"job {job_id} is {e.state} now (a concurrent decision won); nothing was approved", f"run {_SHOW}"
            ) from None
        return self.repo.transition(job_id, "queued", "system", "approved: queued for a worker", expect_from="approved")

    def reject(self, job_id: str, who: str, note: str = "", *, decision: str = "reject") -> JobRecord:
        """A human rejects ``job_id`` (``decision`` ``modify``: rejected, the note carries a suggested
        spec). Raises :class:`ActionError` when the job is not awaiting approval."""
        if decision not in ("reject", "modify"):
            raise ActionError(f"unknown decision {decision!r}", "use reject or modify")
        self.repo.expire_due()
        try:
            return self.repo.transition(
                job_id, "rejected", "human", f"{decision} by {who}" + (f": {note}" if note else ""),
                expect_from="awaiting_approval", who=who, decided_by=who, decided_at=utcnow(),
                decision_note=note or None,
            )  # fmt: skip
        except TransitionRefused as e:
            raise ActionError(
                f"job {job_id} is {e.state}; only a job awaiting approval can be rejected", "nothing to do"
            ) from None

    def cancel_as_human(self, job_id: str, who: str, note: str = "") -> JobRecord:
        """A human cancels any non-final job. Raises :class:`ActionError` for a final one."""
        self.repo.expire_due()
        return self._cancel(self.repo.get(job_id), "human", who, note or f"cancelled by {who}")

    # -- views --------------------------------------------------------------------------------------

    def view(self, job: JobRecord) -> JobView:
        """The wire view of a job, with the workspace files that exist."""
        logs: dict[str, str] = {}
        if job.workspace:
            ws = Path(job.workspace)
            for name in WORKSPACE_FILES:
                if (ws / name).is_file():
                    logs[name] = str(ws / name)
            plots = ws / "plots"
            if plots.is_dir():
                for p in sorted(plots.glob("*.png"))[:20]:
                    logs[f"plots/{p.name}"] = str(p)
        return JobView(
            job_id=job.job_id, state=job.state, requester=job.requester, trainer=job.trainer,
            behaviour=job.behaviour, spec_hash=job.spec_hash, created_at=job.created_at, updated_at=job.updated_at,
            expires_at=job.expires_at, reason=job.reason, decided_by=job.decided_by, decided_at=job.decided_at,
            stage=job.stage, progress=job.progress, metrics=job.metrics, workspace=job.workspace, logs=logs,
        )  # fmt: skip

    def previous_request(self, job: JobRecord) -> JobRecord | None:
        """The newest job of the same requester and behaviour created before ``job`` (among that
        requester's last 200 for the behaviour), or ``None``: what a re-request is compared with."""
        page, _ = self.repo.list(requester=job.requester, behaviour=job.behaviour, limit=200)
        return next((j for j in page if (j.created_at, j.job_id) < (job.created_at, job.job_id)), None)

    def events(self, job_id: str) -> builtins.list[JobEventView]:
        """The job's transitions, oldest first."""
        return [
            JobEventView(
                at=e.at, actor=e.actor, who=e.who, from_state=e.from_state, to_state=e.to_state, reason=e.reason
            )
            for e in self.repo.events(job_id)
        ]

    # -- helpers ------------------------------------------------------------------------------------

    def _own(self, job_id: str, caller: Caller) -> JobRecord:
        try:
            job = self.repo.get(job_id)
        except ActionError:
            job = None
        if job is None or not caller.owns(job.requester):  # another requester's job reads as unknown
            raise ActionError(f"unknown job {job_id!r}", "call training_list for the ids of your jobs")
        return job

    def _cancel(self, job: JobRecord, actor: str, who: str, reason: str) -> JobRecord:
        for _ in range(5):  # the state may move under us (a worker claims it): retry from the new state
            if job.state in FINAL_STATES:
                raise ActionError(
                    f"job {job.job_id} is {job.state}, which is final; nothing to cancel", "nothing to do"
                )
            if job.state == "succeeded":
                raise ActionError(
                    f"job {job.job_id} finished training and is about to be evaluated; it cannot be cancelled now",
                    "call training_status again in a moment and cancel while it is evaluating",
                )
            try:
                return self.repo.transition(job.job_id, "cancelled", actor, reason, expect_from=job.state, who=who)  # type: ignore[arg-type]
            except TransitionRefused:
                job = self.repo.get(job.job_id)
        raise ActionError(f"job {job.job_id} kept changing state; not cancelled", "call training_cancel again")

    def _behaviours(self) -> builtins.list[str]:
        return task_behaviours(self.tasks)

    def _behaviour_known(self, behaviour: str) -> bool:
        return behaviour in task_behaviours(self.tasks)

    def _check_base_model(self, name: str) -> str | None:
        """A name in the operator's registry (returns ``None``), or an absolute folder that holds a
        model: ``config.json`` and a tokenizer (``tokenizer.json``, ``tokenizer_config.json`` or
        ``tokenizer.model``); returns its content digest (:func:`~._model_digest.model_digest`), which
        the spec hash binds and the worker checks again before training. A venv, ``/usr`` or any
        other folder is refused: the trainer would load (and run code from) it; so is a folder inside
        a sandbox (an agent could rewrite it after the approval)."""
        if name in self.settings.models:
            return None
        known = ", ".join(self.settings.models) or "none configured"
        p = Path(name).expanduser()
        if p.is_absolute() and p.is_dir():
            sandboxes = self.settings.sandboxes_dir.resolve()
            real = p.resolve()
            if real == sandboxes or real.is_relative_to(sandboxes):
                raise _field_error(
                    "base_model",
                    f"{name!r} is inside a sandbox (under {sandboxes}): an agent's working copy is not a base model",
                    f"pass a model folder outside the sandboxes or a registry name ({known})",
                )
            missing = [] if (p / "config.json").is_file() else ["config.json"]
            if not any((p / t).is_file() for t in MODEL_TOKENIZER_FILES):
                missing.append(" or ".join(MODEL_TOKENIZER_FILES))
            if not missing:
                try:
                    return model_digest(real)
                except ModelDigestError as e:
                    raise _field_error("base_model", str(e), "pass the folder of a saved model") from None
            raise _field_error(
                "base_model",
                f"{name!r} is a folder but not a model folder (it has no {' and no '.join(missing)})",
                f"pass the folder of a saved model (config.json plus tokenizer files) or a registry name ({known})",
            )
        raise _field_error(
            "base_model",
            f"{name!r} is neither an existing local model folder (absolute path) nor a name the operator's "
            f"model registry knows ({known})",
            "pass an absolute path of a model folder, one of the registry's names, or ask the operator to add "
            "it to AGENT_RL_SANDBOX_MODELS",
        )

    def _check_hyperparameters(self, spec: JobSpec) -> None:
        """Every ``spec.hyperparameters`` name is one the trainer accepts, with the right type (one list
        with the trainers: :data:`~agent_rl_sandbox.schemas.jobs.KNOWN_HYPERPARAMETERS`); a
        ``max_steps`` is within ``caps.max_steps`` (the cap the human approves is the one that holds,
        and a spec must not show the approver a number the trainer would not run)."""
        for name, value in spec.hyperparameters.items():
            why = hyperparameter_problem(spec.trainer, name, value)
            if why is not None:
                raise _field_error(f"hyperparameters.{name}", *why)
        steps = spec.hyperparameters.get("max_steps")
        if isinstance(steps, int) and steps > spec.caps.max_steps:
            raise _field_error(
                "hyperparameters.max_steps",
                f"{steps} is above caps.max_steps ({spec.caps.max_steps}), which bounds the run",
                f"pass hyperparameters.max_steps <= {spec.caps.max_steps}, or raise caps.max_steps "
                f"(at most {self.settings.job_max_steps})",
            )

    def _check_gate(self, spec: JobSpec) -> None:
        gates = self.gates()
        if spec.gate.name not in gates:
            raise _field_error(
                "gate.name",
                f"unknown eval gate {spec.gate.name!r}",
                f"pass one of: {', '.join(sorted(gates))} (eval_gate)",
            )
        b = spec.gate.behaviour
        if not self._behaviour_known(b):
            raise _field_error(
                "gate.behaviour", f"unknown behaviour {b!r}", f"pass one of: {', '.join(self._behaviours())}"
            )
        if not any(t.config.behaviour == b and t.config.split == "heldout" for t in self.tasks.values()):
            raise _field_error(
                "gate.behaviour",
                f"behaviour {b!r} has no held-out variants, so there is no held-out suite to gate on",
                "pick a behaviour whose list_tasks entries include split 'heldout', or ask the operator to add "
                "held-out variants",
            )

    def _check_caps(self, spec: JobSpec) -> None:
        s = self.settings
        for field, value, limit in (
            ("caps.max_steps", spec.caps.max_steps, s.job_max_steps),
            ("caps.timeout_s", spec.caps.timeout_s, s.job_max_timeout_s),
            ("caps.max_gpu_hours", spec.caps.max_gpu_hours, s.job_max_gpu_hours),
        ):
            if value > limit:
                raise _field_error(field, f"{value} is above the operator's limit {limit}", f"pass at most {limit}")

    def _check_dataset_root(self, raw: str, real: Path) -> None:
        """A training dataset comes from this home's exports or the operator's data folders, never from
        a sandbox (an agent writes its own working copy) nor from anywhere else the validator may read
        (the server's working folder). ``real`` is the resolved path."""
        home = self.settings.home.resolve()
        sandboxes = self.settings.sandboxes_dir.resolve()
        if real == sandboxes or real.is_relative_to(sandboxes):
            raise _field_error(
                "dataset.path",
                f"{raw!r} is inside a sandbox (under {sandboxes}): an agent's working copy is not training data",
                "export your server-scored trajectories with trajectory_export and pass the data_path it returns",
            )
        roots = [home / "exports", *(d.resolve() for d in self.settings.data_dirs)]
        if not any(real.is_relative_to(r) for r in roots):
            raise _field_error(
                "dataset.path",
                f"{raw!r} is not under this server's exports or the operator's data folders "
                f"({', '.join(map(str, roots))})",
                "pass the data_path trajectory_export returned, or ask the operator to add its folder to "
                "AGENT_RL_SANDBOX_DATA_DIRS",
            )

    def _check_dataset_file(self, spec: JobSpec) -> tuple[str, dict[str, Any]]:
        ds = spec.dataset
        assert ds.kind == "file"
        try:
            real = self.datasets._allowed(ds.path, "dataset.path")
        except ActionError as e:
            raise _field_error("dataset.path", e.message, e.hint) from None
        self._check_dataset_root(ds.path, real)
        if not real.is_file():
            raise _field_error("dataset.path", f"{ds.path!r} is not a file", "pass the path of a JSONL dataset file")
        try:
            before = file_sha256(real)
            out = self.datasets.validate(DatasetValidateInput(path=str(real), max_errors=5))
            after = file_sha256(real)
        except OSError as e:
            raise _field_error(
                "dataset.path", f"cannot read {ds.path!r} ({e.strerror})", "pass a readable file"
            ) from None
        except ActionError as e:  # the file could not be read (e.g. swapped for a symlink meanwhile)
            raise _field_error("dataset.path", e.message, e.hint) from None
        r = out.report
        summary = {
            "verdict": out.verdict,
            "rows": r.rows,
            "kinds": r.kinds,
            "error_count": r.error_count,
            "warning_count": r.warning_count,
            "error_counts_by_code": r.error_counts_by_code,
            "full_report_path": r.full_report_path,
            "sha256": after,
        }
        if out.verdict != "valid":
            first = r.errors[0] if r.errors else None
            where = f" (first: line {first.line}: {first.message})" if first is not None else ""
            problem = f"the dataset validator found {r.error_count} error(s){where}"
            raise _field_error(
                "dataset.path",
                f"{problem} (full report: {r.full_report_path})",
                "fix the rows the report lists (dataset_validate shows them) and request again",
            )
        if before != after:
            raise _field_error(
                "dataset.path", "the file changed while it was validated", "request again once it is stable"
            )
        if ds.sha256 is not None and ds.sha256 != after:
            raise _field_error(
                "dataset.sha256",
                f"the file's SHA-256 is {after}, not the {ds.sha256} given",
                "drop dataset.sha256 (it is filled in) or pass the file you meant",
            )
        return after, summary

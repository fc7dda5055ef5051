"""Trajectory service: the domain logic behind the ``trajectory_*`` MCP tools (and the CLI's import/export).

Provenance is enforced here, not trusted from the caller: a step logged through ``trajectory_log_step``
is always ``agent`` (self-reported), whatever the client sends. Only sandbox tools record ``server``
steps and only the hook command records ``hook`` steps; both write through the store directly.
A trajectory's behaviour and split come from the task registry, never from the client.

Ownership (:mod:`agent_rl_sandbox.tools._caller`): a trajectory belongs to the caller that started it
(``trajectory_start``, or ``sandbox_reset`` for a sandbox's episode). Only its owner may log steps to it
or finish it. An agent reading trajectories sees its own in full, other owners' train trajectories
without their sandbox id and external id (capabilities of their owner), and never another owner's
held-out trajectory: it is not listed, and ``trajectory_get`` refuses it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path

from agent_rl_sandbox.schemas.tools import (
    LoggedStepRef,
    TrajectoryExportInput,
    TrajectoryExportOutput,
    TrajectoryFinishInput,
    TrajectoryFinishOutput,
    TrajectoryGetInput,
    TrajectoryGetOutput,
    TrajectoryListInput,
    TrajectoryListOutput,
    TrajectoryLogStepInput,
    TrajectoryLogStepOutput,
    TrajectoryStartInput,
    TrajectoryStartOutput,
)
from agent_rl_sandbox.schemas.trajectory import ImportReport, Step, TrajectorySummary, quarantine_extra
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import OPERATOR, Caller, ensure_owner, ensure_readable
from agent_rl_sandbox.tools.errors import ActionError, WouldWait
from agent_rl_sandbox.tools.formats.signing import export_key
from agent_rl_sandbox.tools.store import StoreError, TrajectoryRepository, unknown_trajectory
from agent_rl_sandbox.tools.trajectories._export import (
    FORMATS,
    SIGNED_FORMATS,
    ExportOptions,
    ExportResult,
    export_trajectories,
)
from agent_rl_sandbox.tools.trajectories._import import import_file

log = logging.getLogger(__name__)

TaskInfo = Callable[[str], tuple[str | None, str | None] | None]
"""``task_id -> (behaviour, split)`` from the task registry, or ``None`` for an unknown task."""


def _without(step: Step, sandbox_id: str) -> Step:
    """``step`` with every occurrence of ``sandbox_id`` (e.g. in a printed path) replaced by ``<sandbox>``."""
    raw = step.model_dump_json()
    return step if sandbox_id not in raw else Step.model_validate_json(raw.replace(sandbox_id, "<sandbox>"))


class TrajectoryService:
    """Start, log, finish, read, list, import and export trajectories.

    ``task_info`` resolves a task id against the task registry (the sandbox service's tasks); without it
    every task is unknown (no behaviour or split is assigned). Raises :class:`ActionError` (with a next
    step) for anything an agent or user can fix.
    """

    def __init__(self, settings: Settings, store: TrajectoryRepository, task_info: TaskInfo | None = None):
        self.settings = settings
        self.store = store
        self.task_info = task_info or (lambda _task_id: None)

    @property
    def exports_dir(self) -> Path:
        return self.settings.home / "exports"

    def _task_split(self, task_id: str) -> str | None:
        info = self.task_info(task_id)
        return info[1] if info else None

    def _heldout(self, s: TrajectorySummary) -> bool:
        """Held out when stored so, or when its task is held out in the registry now."""
        return s.split == "heldout" or bool(s.task_id and self._task_split(s.task_id) == "heldout")

    def _ensure_writer(self, caller: Caller, session_id: str) -> None:
        self._ensure_writer_of(caller, session_id, self.store.owner(session_id))  # StoreError for an unknown id

    @staticmethod
    def _ensure_writer_of(caller: Caller, session_id: str, owner: str | None) -> None:
        ensure_owner(
            caller,
            owner,
            "trajectory",
            session_id,
            "log to a trajectory you started: call trajectory_start (or sandbox_reset) and use the session_id it returns",
        )

    @staticmethod
    def _as_seen_by(caller: Caller, s: TrajectorySummary, owner: str | None) -> TrajectorySummary:
        """``s`` without the fields that are capabilities of its owner, unless ``caller`` owns it."""
        return s if caller.owns(owner) else s.model_copy(update={"sandbox_id": None, "external_id": None})

    # -- MCP tools -----------------------------------------------------------------------------
    def start(self, inp: TrajectoryStartInput, caller: Caller = OPERATOR) -> TrajectoryStartOutput:
        """Start a self-logged trajectory owned by ``caller`` (idempotent on ``external_id`` among the
        caller's own running trajectories)."""
        behaviour = split = None
        if inp.task_id is not None:
            info = self.task_info(inp.task_id)
            if info is None:
                raise ActionError(
                    f"unknown task {inp.task_id!r}",
                    "call list_tasks for task ids, or omit task_id for a trajectory outside the curriculum",
                )
            behaviour, split = info
        agent = {
            "name": inp.agent_name,
            "version": inp.agent_version,
            "model_name": inp.model_name,
            "tool_definitions": inp.tool_definitions,
        }
        agent = {k: v for k, v in agent.items() if v is not None}
        if inp.external_id is not None:
            found = self.store.by_external_id(f"mcp:{inp.external_id}")
            owners = self.store.owners([s.session_id for s in found])
            for s in reversed(found):
                if s.status == "running" and owners.get(s.session_id) == caller.owner_id:
                    return TrajectoryStartOutput(trajectory=s, created=False)
        if inp.parent_session_id is not None:
            # another owner's id gets the unknown-id error word for word: a parent must not reveal that
            # another agent's (held-out) trajectory exists
            if not caller.owns(self.store.owners([inp.parent_session_id]).get(inp.parent_session_id, caller.owner_id)):
                raise unknown_trajectory(inp.parent_session_id)
            parent = self.store.summary(inp.parent_session_id)
            if parent.status != "finished":
                raise ActionError(
                    f"trajectory {inp.parent_session_id} is still running",
                    "log to it directly; parent_session_id is for correcting a finished trajectory",
                )
        summary = self.store.start(
            agent=agent,
            task_id=inp.task_id,
            behaviour=behaviour,
            split=split,
            origin="mcp",
            external_id=f"mcp:{inp.external_id}" if inp.external_id else None,
            parent_session_id=inp.parent_session_id,
            owner=caller.owner_id,
        )
        return TrajectoryStartOutput(trajectory=summary, created=True)

    def log_step(
        self, inp: TrajectoryLogStepInput, caller: Caller = OPERATOR, *, nowait: bool = False
    ) -> TrajectoryLogStepOutput:
        """Append one step or a batch, atomically; always recorded as provenance ``agent``. Raises
        :class:`ActionError` unless ``caller`` started the trajectory. With ``nowait`` (the MCP adapter's
        first try, on its event loop) it raises :class:`WouldWait` instead of waiting for the store's
        write lock, and at once where the store cannot write without waiting (PostgreSQL); nothing is
        written then and the caller repeats the call without ``nowait``."""
        if nowait and not self.store.writes_without_waiting:
            raise WouldWait("this store's writes may wait")
        items = [inp.step] if inp.step is not None else list(inp.steps or [])
        payload = []
        for s in items:
            d = s.model_dump(exclude_none=True)
            d["provenance"] = "agent"  # enforced: self-logged, whatever the client claims
            if d.get("extra"):  # server-looking keys are claims: never readable as the server's record
                d["extra"] = quarantine_extra(d["extra"])
            payload.append(d)
        # the owner is checked by the store: on SQLite in the write transaction itself, from the row the
        # append reads anyway (no read of its own), before anything is written and before any step error
        res = self.store.log_steps(
            inp.session_id,
            payload,
            nowait=nowait,
            owner_check=functools.partial(self._ensure_writer_of, caller, inp.session_id),
        )
        return TrajectoryLogStepOutput(
            session_id=inp.session_id,
            steps=[
                LoggedStepRef(step_id=s.step_id, client_step_id=s.client_step_id, created=c)
                for s, c in zip(res.steps, res.created, strict=True)
            ],
            step_count=res.step_count or self.store.summary(inp.session_id).step_count,
            redactions=dict(res.redactions),
        )

    def finish(self, inp: TrajectoryFinishInput, caller: Caller = OPERATOR) -> TrajectoryFinishOutput:
        """Close a self-logged trajectory the caller started. Its reward stays unset: only scoring against
        verified state sets it."""
        self._ensure_writer(caller, inp.session_id)
        summary = self.store.summary(inp.session_id)
        if summary.sandbox_id is not None:
            raise ActionError(
                f"trajectory {inp.session_id} records sandbox {summary.sandbox_id}",
                "call sandbox_finish with that sandbox_id: it runs the verifier, scores and closes the trajectory",
            )
        if summary.status == "finished":
            raise StoreError(f"trajectory {inp.session_id} is already finished", "trajectory_get shows it")
        return TrajectoryFinishOutput(
            trajectory=self.store.finish(inp.session_id, final_message=inp.final_message or None)
        )

    def get(self, inp: TrajectoryGetInput, caller: Caller = OPERATOR) -> TrajectoryGetOutput:
        """A page of a trajectory's steps plus the path of a file holding all of it. Raises
        :class:`ActionError` for another owner's held-out trajectory."""
        summary = self.store.summary(inp.session_id)
        owner = self.store.owners([inp.session_id]).get(inp.session_id)
        ensure_readable(caller, owner, self._heldout(summary), inp.session_id)
        traj = self.store.get(inp.session_id)
        self.settings.reports_dir.mkdir(parents=True, exist_ok=True)
        path = self.settings.reports_dir / f"{inp.session_id}.trajectory.json"
        path.write_text(traj.model_dump_json(indent=2, exclude_none=True))
        page = traj.steps[inp.offset : inp.offset + inp.limit]
        if traj.sandbox_id and not caller.owns(owner):  # command output may print the sandbox's path
            page = [_without(s, traj.sandbox_id) for s in page]
        end = inp.offset + len(page)
        return TrajectoryGetOutput(
            trajectory=self._as_seen_by(caller, self.store.summary(inp.session_id), owner),
            steps=page,
            total_steps=len(traj.steps),
            next_offset=end if end < len(traj.steps) else None,
            full_path=str(path),
        )

    def list(self, inp: TrajectoryListInput, caller: Caller = OPERATOR) -> TrajectoryListOutput:
        """Trajectories matching the filters and visible to ``caller``, newest first, one page at a time."""
        filters = inp.model_dump(exclude={"limit", "offset"}, exclude_none=True)
        if not caller.operator:
            filters["visible_to"] = caller.owner_id
        try:
            rows, total = self.store.list(limit=inp.limit, offset=inp.offset, **filters)
        except ValueError as e:
            raise ActionError(f"bad time filter: {e}", "pass ISO-8601 times such as 2026-11-29T12:00:00Z") from None
        owners = self.store.owners([s.session_id for s in rows])
        rows = [self._as_seen_by(caller, s, owners.get(s.session_id)) for s in rows]
        end = inp.offset + len(rows)
        return TrajectoryListOutput(trajectories=rows, total=total, next_offset=end if end < total else None)

    def export(self, inp: TrajectoryExportInput, caller: Caller = OPERATOR) -> TrajectoryExportOutput:
        """Write one export under ``<home>/exports/<export_id>/`` with its manifest. Held-out trajectories
        are exported for the operator only (the CLI): an agent's ``include_heldout`` is refused. An agent
        exports only its own trajectories (:meth:`Caller.owns`), and self-reported ones only with
        ``include_self_reported`` (see :func:`~._export.trust_of`)."""
        from agent_rl_sandbox.tools.datasets import validate_file

        info = FORMATS.get(inp.format)
        if inp.include_heldout and not caller.operator and info is not None and not info.training:
            raise ActionError(
                "held-out trajectories are exported by the operator only",
                "drop include_heldout; a human exports evaluation material with the CLI `export`",
            )

        res = self.export_to(ExportOptions(**inp.model_dump()), self.exports_dir, caller=caller)
        m = res.manifest
        report = validate_file(res.data_path, kind=m.files[0].kind)
        errors = [f"line {e.line} {e.json_path} {e.code}: {e.message}" for e in report.errors[:5]]
        if not report.ok:
            log.warning("export %s failed validation: %s", m.export_id, errors)
        return TrajectoryExportOutput(
            export_id=m.export_id,
            format=m.format,
            rows=m.rows,
            data_path=str(res.data_path),
            manifest_path=str(res.manifest_path),
            counts=m.counts,
            source_trajectories=len(m.source_session_ids),
            by_trust=m.by_trust,
            owner_scope=m.owner_scope,
            sha256=m.sha256,
            valid=report.ok,
            validation_errors=errors,
        )

    # -- CLI -----------------------------------------------------------------------------------
    def export_to(self, opts: ExportOptions, out_root: Path, *, caller: Caller = OPERATOR) -> ExportResult:
        """Export into ``out_root/<export_id>/`` (the CLI may choose ``out_root``); an agent ``caller``
        exports only the trajectories it owns."""
        key = export_key(self.settings.home, create=True) if opts.format in SIGNED_FORMATS else None
        return export_trajectories(
            self.store, opts, out_root, task_split=self._task_split, signing_key=key, caller=caller
        )

    def import_file(self, path: str | Path, *, format: str | None = None) -> ImportReport:
        """Import one file (see :func:`~._import.import_file`)."""
        return import_file(self.store, path, format=format, task_lookup=self.task_info)

"""Trajectory service: the domain logic behind the ``trajectory_*`` MCP tools (and the CLI's import/export).

Provenance is enforced here, not trusted from the caller: a step logged through ``trajectory_log_step``
is always ``agent`` (self-reported), whatever the client sends. Only sandbox tools record ``server``
steps and only the hook command records ``hook`` steps; both write through the store directly.
A trajectory's behaviour and split come from the task registry, never from the client.
"""

from __future__ import annotations

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
from agent_rl_sandbox.schemas.trajectory import ImportReport
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.formats.signing import export_key
from agent_rl_sandbox.tools.store import StoreError, TrajectoryRepository
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

    # -- MCP tools -----------------------------------------------------------------------------
    def start(self, inp: TrajectoryStartInput) -> TrajectoryStartOutput:
        """Start a self-logged trajectory (idempotent on ``external_id``)."""
        behaviour = split = None
        if inp.task_id is not None:
            info = self.task_info(inp.task_id)
            if info is None:
                raise ActionError(
                    f"unknown task {inp.task_id!r}",
                    "call list_tasks for task ids, or omit task_id for a trajectory outside the curriculum",
                )
            behaviour, split = info
        agent = {"name": inp.agent_name, "version": inp.agent_version, "model_name": inp.model_name,
                 "tool_definitions": inp.tool_definitions}
        agent = {k: v for k, v in agent.items() if v is not None}
        if inp.external_id is not None:
            for s in reversed(self.store.by_external_id(f"mcp:{inp.external_id}")):
                if s.status == "running":
                    return TrajectoryStartOutput(trajectory=s, created=False)
        if inp.parent_session_id is not None:
            parent = self.store.summary(inp.parent_session_id)
            if parent.status != "finished":
                raise ActionError(
                    f"trajectory {inp.parent_session_id} is still running",
                    "log to it directly; parent_session_id is for correcting a finished trajectory",
                )
        summary = self.store.start(
            agent=agent, task_id=inp.task_id, behaviour=behaviour, split=split, origin="mcp",
            external_id=f"mcp:{inp.external_id}" if inp.external_id else None,
            parent_session_id=inp.parent_session_id,
        )
        return TrajectoryStartOutput(trajectory=summary, created=True)

    def log_step(self, inp: TrajectoryLogStepInput) -> TrajectoryLogStepOutput:
        """Append one step or a batch, atomically; always recorded as provenance ``agent``."""
        items = [inp.step] if inp.step is not None else list(inp.steps or [])
        payload = []
        for s in items:
            d = s.model_dump(exclude_none=True)
            d["provenance"] = "agent"  # enforced: self-logged, whatever the client claims
            payload.append(d)
        res = self.store.log_steps(inp.session_id, payload)
        return TrajectoryLogStepOutput(
            session_id=inp.session_id,
            steps=[
                LoggedStepRef(step_id=s.step_id, client_step_id=s.client_step_id, created=c)
                for s, c in zip(res.steps, res.created, strict=True)
            ],
            step_count=res.step_count or self.store.summary(inp.session_id).step_count,
            redactions=dict(res.redactions),
        )

    def finish(self, inp: TrajectoryFinishInput) -> TrajectoryFinishOutput:
        """Close a self-logged trajectory. Its reward stays unset: only scoring against verified state sets it."""
        summary = self.store.summary(inp.session_id)
        if summary.sandbox_id is not None:
            raise ActionError(
                f"trajectory {inp.session_id} records sandbox {summary.sandbox_id}",
                "call sandbox_finish with that sandbox_id: it runs the verifier, scores and closes the trajectory",
            )
        if summary.status == "finished":
            raise StoreError(f"trajectory {inp.session_id} is already finished", "trajectory_get shows it")
        return TrajectoryFinishOutput(trajectory=self.store.finish(inp.session_id, final_message=inp.final_message or None))

    def get(self, inp: TrajectoryGetInput) -> TrajectoryGetOutput:
        """A page of a trajectory's steps plus the path of a file holding all of it."""
        traj = self.store.get(inp.session_id)
        self.settings.reports_dir.mkdir(parents=True, exist_ok=True)
        path = self.settings.reports_dir / f"{inp.session_id}.trajectory.json"
        path.write_text(traj.model_dump_json(indent=2, exclude_none=True))
        page = traj.steps[inp.offset : inp.offset + inp.limit]
        end = inp.offset + len(page)
        summary = self.store.summary(inp.session_id)
        return TrajectoryGetOutput(
            trajectory=summary,
            steps=page,
            total_steps=len(traj.steps),
            next_offset=end if end < len(traj.steps) else None,
            full_path=str(path),
        )

    def list(self, inp: TrajectoryListInput) -> TrajectoryListOutput:
        """Trajectories matching the filters, newest first, one page at a time."""
        filters = inp.model_dump(exclude={"limit", "offset"}, exclude_none=True)
        try:
            rows, total = self.store.list(limit=inp.limit, offset=inp.offset, **filters)
        except ValueError as e:
            raise ActionError(f"bad time filter: {e}", "pass ISO-8601 times such as 2026-11-29T12:00:00Z") from None
        end = inp.offset + len(rows)
        return TrajectoryListOutput(trajectories=rows, total=total, next_offset=end if end < total else None)

    def export(self, inp: TrajectoryExportInput, caller: Caller = OPERATOR) -> TrajectoryExportOutput:
        """Write one export under ``<home>/exports/<export_id>/`` with its manifest. Held-out trajectories
        are exported for the operator only (the CLI): an agent's ``include_heldout`` is refused."""
        from agent_rl_sandbox.tools.datasets import validate_file

        info = FORMATS.get(inp.format)
        if inp.include_heldout and not caller.operator and info is not None and not info.training:
            raise ActionError(
                "held-out trajectories are exported by the operator only",
                "drop include_heldout; a human exports evaluation material with the CLI `export`",
            )

        res = self.export_to(ExportOptions(**inp.model_dump()), self.exports_dir)
        m = res.manifest
        report = validate_file(res.data_path, kind=m.files[0].kind)
        errors = [f"line {e.line} {e.json_path} {e.code}: {e.message}" for e in report.errors[:5]]
        if not report.ok:
            log.warning("export %s failed validation: %s", m.export_id, errors)
        return TrajectoryExportOutput(
            export_id=m.export_id, format=m.format, rows=m.rows, data_path=str(res.data_path),
            manifest_path=str(res.manifest_path), counts=m.counts, source_trajectories=len(m.source_session_ids),
            sha256=m.sha256, valid=report.ok, validation_errors=errors,
        )

    # -- CLI -----------------------------------------------------------------------------------
    def export_to(self, opts: ExportOptions, out_root: Path) -> ExportResult:
        """Export into ``out_root/<export_id>/`` (the CLI may choose ``out_root``)."""
        key = export_key(self.settings.home, create=True) if opts.format in SIGNED_FORMATS else None
        return export_trajectories(self.store, opts, out_root, task_split=self._task_split, signing_key=key)

    def import_file(self, path: str | Path, *, format: str | None = None) -> ImportReport:
        """Import one file (see :func:`~._import.import_file`)."""
        return import_file(self.store, path, format=format, task_lookup=self.task_info)

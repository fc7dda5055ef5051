"""``agent-rl-sandbox export FORMAT``: trajectories as training data (or ATIF / a suite) with a manifest.

Exit statuses (the package's rule): 0 exported (and valid, unless ``--no-validate``); 1 the export
was refused (held-out or running trajectories into a training format, nothing left after the
filters, a malformed time) or the validator rejects the file; 2 an unknown format, a ``--task`` that
no task folder and no stored trajectory names, a ``--min-reward`` outside [0, 1].
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, TaskDirOpt, plural, settings, unknown_task
from agent_rl_sandbox.cli._outcome import BadInput, verdict

FORMATS_HELP = "sft, dpo, kto, grpo, minimind_sft, minimind_dpo, minimind_agentic, atif, suite."


def export(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=FORMATS_HELP)],
    out: Annotated[
        Path | None, typer.Option("--out", metavar="DIR", help="Folder for <export_id>/ (default: <home>/exports).")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", metavar="TASK_ID", help="Only this task id.")] = None,
    behaviour: Annotated[
        str | None,
        typer.Option(
            "--behaviour", "--behavior", metavar="BEHAVIOUR", help="Only trajectories of tasks with this behaviour."
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", metavar="NAME", help="Only this agent name.")] = None,
    origin: Annotated[
        str | None, typer.Option("--origin", metavar="ORIGIN", help="sandbox, mcp, hook, import, ...")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="TIME", help="Created at or after (ISO-8601).")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", metavar="TIME", help="Created before (ISO-8601).")] = None,
    min_reward: Annotated[
        float | None, typer.Option("--min-reward", metavar="REWARD", help="SFT/DPO-chosen minimum reward.")
    ] = 1.0,
    any_reward: Annotated[bool, typer.Option("--any-reward", help="SFT: include unscored trajectories too.")] = False,
    include_heldout: Annotated[bool, typer.Option("--include-heldout", help="atif/suite only.")] = False,
    include_running: Annotated[bool, typer.Option("--include-running", help="atif/suite only.")] = False,
    include_unknown_tasks: Annotated[
        bool, typer.Option("--include-unknown-tasks", help="Also trajectories with no task id or an unknown task.")
    ] = False,
    validate: Annotated[
        bool, typer.Option("--validate/--no-validate", help="Run the dataset validator on the result.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
    home: HomeOpt = None,
    task_dir: TaskDirOpt = None,
) -> None:
    """Export trajectories as training data (or ATIF / a suite) with a manifest; exit 1 when nothing was
    exported or the validator rejects the file, 2 for an unknown format."""
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.tools.errors import ActionError
    from agent_rl_sandbox.tools.trajectories import FORMATS, ExportOptions

    if fmt not in FORMATS:
        raise BadInput(f"unknown export format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if min_reward is not None and not 0.0 <= min_reward <= 1.0:
        raise BadInput(
            f"--min-reward {min_reward:g} is outside [0, 1] (rewards are in [0, 1])",
            "give a value from 0 to 1, or --any-reward to include unscored trajectories",
        )
    from agent_rl_sandbox.tools.sandbox import task_behaviours
    from agent_rl_sandbox.tools.store import normalise_time

    for flag, value in (("--since", since), ("--until", until)):
        if value is not None:
            try:
                normalise_time(value)
            except ValueError as e:
                raise BadInput(
                    f"bad time {flag} {value!r}: {e}", "pass an ISO-8601 time such as 2026-11-29T12:00:00Z"
                ) from None
    services = Services.build(settings(home, task_dir))
    known = task_behaviours(services.sandbox.tasks)
    if (
        behaviour is not None
        and behaviour not in known
        and not services.store.trajectories.list(behaviour=behaviour, limit=1)[1]
    ):
        services.close()
        raise BadInput(
            f"unknown behaviour {behaviour!r}: no task and no stored trajectory has it",
            f"use one of {', '.join(known)} (agent-rl-sandbox tasks list)",
        )
    if (
        task is not None
        and task not in services.sandbox.tasks
        and not services.store.trajectories.list(task_id=task, limit=1)[1]
    ):
        services.close()
        raise unknown_task(task)
    opts = ExportOptions(
        format=fmt,
        task_id=task,
        behaviour=behaviour,
        agent_name=agent,
        origin=origin,
        created_after=since,
        created_before=until,
        min_reward=None if any_reward else min_reward,
        include_heldout=include_heldout,
        include_running=include_running,
        include_unknown_tasks=include_unknown_tasks,
    )
    try:
        res = services.trajectories.export_to(opts, out or services.trajectories.exports_dir)
    except ActionError as e:  # a refused export is a verdict (exit 1), not an input error
        typer.echo(e.agent_text(), err=True)
        verdict(False)
    finally:
        services.close()
    valid: bool | None = None  # None: not validated (--no-validate)
    error_count = 0
    if validate:
        from agent_rl_sandbox.tools.datasets import validate_file

        valid = True
        for f in res.manifest.files:
            report = validate_file(res.directory / f.path, kind=f.kind)
            if not report.ok:
                valid = False
                error_count += len(report.errors)
                for e in report.errors[:20]:
                    typer.echo(f"invalid: {f.path}:{e.line} {e.json_path} {e.code}: {e.message}", err=True)
    if as_json:  # the manifest, and "valid" as the MCP tool's result has it (null with --no-validate)
        import json

        typer.echo(json.dumps({**res.manifest.model_dump(mode="json"), "valid": valid}, indent=2))
    else:
        m = res.manifest
        skipped = ", ".join(f"{k}={v}" for k, v in m.counts.items() if k not in ("considered", "selected"))
        n_traj = plural(len(m.source_session_ids), "trajectory")
        typer.echo(f"{m.format}: {plural(m.rows, 'row')} from {n_traj} -> {res.data_path}")
        typer.echo(f"manifest: {res.manifest_path} (sha256 {m.sha256[:16]}...)" + (f"; {skipped}" if skipped else ""))
        kinds = ", ".join(sorted({f.kind for f in m.files}))
        if valid is None:
            typer.echo("validation: skipped (--no-validate); `agent-rl-sandbox validate FILE` checks it later")
        elif valid:
            typer.echo(f"validation: valid ({kinds}; the dataset validator found no errors)")
        else:
            typer.echo(f"validation: INVALID ({plural(error_count, 'error')}, listed on stderr)")
    verdict(valid is not False)

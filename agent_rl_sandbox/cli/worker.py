"""``agent-rl-sandbox worker [--once] [--max-jobs N]``: claim approved training jobs and run them.

The worker is its own process (a subreaper of its stages). Stage commands come from the operator's
``<home>/worker.toml`` (or ``AGENT_RL_SANDBOX_WORKER_CONFIG``), never from a request; the shipped
default runs every stage (``validate``, ``baseline``, ``train``, ``post_eval``, ``gate``). ``--once`` exits when nothing is
claimable; ``--max-jobs N`` after N jobs; without either it polls forever. SIGTERM ends it through
the normal exit path (the current stage's processes are killed, its job is left to lease recovery).

Exit statuses (the package's rule): 0 the worker ran and stopped; 2 bad input (a malformed
worker.toml, an unreachable store).
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import HomeOpt, settings
from agent_rl_sandbox.cli._outcome import BadInput


def worker(
    once: Annotated[bool, typer.Option("--once", help="Exit when no job is claimable instead of polling.")] = False,
    max_jobs: Annotated[
        int | None, typer.Option("--max-jobs", metavar="N", min=1, help="Exit after running N jobs.")
    ] = None,
    lease_s: Annotated[
        float, typer.Option("--lease-seconds", metavar="S", min=1, help="Claim lease; renewed every third of it.")
    ] = 60.0,
    poll_s: Annotated[float, typer.Option("--poll-seconds", metavar="S", min=0.1, help="Wait between polls.")] = 2.0,
    home: HomeOpt = None,
) -> None:
    """Claim approved training jobs and run their stages (operator-configured commands)."""
    from agent_rl_sandbox.worker import WorkerConfigError, build_worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    resolved = settings(home)
    try:
        w, services = build_worker(resolved, lease_s=lease_s)
    except WorkerConfigError as exc:
        raise BadInput(str(exc).split(" Next step: ")[0], "fix the worker configuration file") from None
    services.close_at_exit()
    missing = w.config.missing()
    if missing:
        logging.warning(
            "stages not installed: %s (%s); jobs that reach them fail with stage_not_installed",
            ", ".join(missing), w.config.source,
        )  # fmt: skip
    ran = w.run(once=once, max_jobs=max_jobs, poll_s=poll_s)
    typer.echo(f"worker {w.worker_id}: ran {ran} job(s)")

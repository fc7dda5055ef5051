"""The worker: claims approved training jobs and runs their stages as subprocesses that cannot
outlive it.

Public surface:

- :func:`run_stage`, :class:`StageResult`: one stage in its own process group with a timeout, a
  cancel check, SIGTERM then SIGKILL, and a sweep that kills every process of the job.
- :func:`become_subreaper`, :func:`job_processes`, :func:`kill_job_processes`, :data:`JOB_ENV`: how
  the sweep finds processes that ``setsid``, double-fork or ignore SIGTERM.
- :class:`JobWorkspace`: ``<home>/jobs/<job id>/`` and the files in it.
- :func:`append_result`, :func:`read_results`, :data:`RESULT_COLUMNS`: ``<home>/jobs/results.csv``.
- :class:`Worker`, :func:`build_worker`: the loop that claims jobs (leases, heartbeats, recovery)
  and runs their stages.
- :func:`load_worker_config`, :class:`WorkerConfig`, :class:`StageCommand`, :data:`STAGE_ORDER`,
  :data:`DEFAULT_WORKER_TOML`: the operator's stage commands (never the request's).
"""

from agent_rl_sandbox.worker._build import build_worker
from agent_rl_sandbox.worker._config import (
    DEFAULT_WORKER_TOML,
    STAGE_ORDER,
    StageCommand,
    WorkerConfig,
    WorkerConfigError,
    load_worker_config,
    parse_worker_config,
)
from agent_rl_sandbox.worker._loop import Worker, default_worker_id
from agent_rl_sandbox.worker._reap import JOB_ENV, become_subreaper, job_processes, kill_job_processes
from agent_rl_sandbox.worker._results import RESULT_COLUMNS, append_result, read_results
from agent_rl_sandbox.worker._runner import StageResult, StageStatus, run_stage
from agent_rl_sandbox.worker._workspace import JobWorkspace

__all__ = [
    "DEFAULT_WORKER_TOML",
    "JOB_ENV",
    "RESULT_COLUMNS",
    "STAGE_ORDER",
    "JobWorkspace",
    "StageCommand",
    "StageResult",
    "StageStatus",
    "Worker",
    "WorkerConfig",
    "WorkerConfigError",
    "append_result",
    "become_subreaper",
    "build_worker",
    "default_worker_id",
    "job_processes",
    "kill_job_processes",
    "load_worker_config",
    "parse_worker_config",
    "read_results",
    "run_stage",
]

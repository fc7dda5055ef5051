"""Training jobs: the spec's canonical hash, the state machine, the repository (job rows, the
append-only event log, the worker's claims and leases) and the service behind the faces.

Public surface:

- :func:`canonical_spec`, :func:`spec_hash`: what a human's approval is bound to; :func:`spec_changes`:
  what differs between two specs.
- :data:`TRANSITIONS`, :func:`allowed`, :func:`is_final`: the state machine and who may move it.
- :class:`JobRepository` (with :class:`JobRecord`, :class:`JobEvent`, :class:`TransitionRefused`):
  ``add``, ``get``, ``list``, ``events``, ``transition`` (one conditional update + one event),
  ``expire_due``, ``claim``/``heartbeat``/``recover_lost`` and the SQLite worker lock.
- :class:`JobService`: ``request``/``status``/``list``/``cancel`` (agents, the MCP tools) and
  ``approve``/``reject``/``cancel_as_human`` (humans only: the CLI and the web page).
- :func:`log_tail`, :func:`read_scores`, :func:`metrics_series`, :func:`plot_names`,
  :func:`plot_bytes`: a job workspace read for the human faces (bounded, no symlink followed).
"""

from agent_rl_sandbox.tools.jobs._hash import canonical_spec, spec_changes, spec_hash
from agent_rl_sandbox.tools.jobs._repository import (
    ACTIVE_STATES,
    JobEvent,
    JobRecord,
    JobRepository,
    TransitionRefused,
    later,
)
from agent_rl_sandbox.tools.jobs._service import JobService, file_sha256
from agent_rl_sandbox.tools.jobs._states import TRANSITIONS, Actor, allowed, is_final
from agent_rl_sandbox.tools.jobs._workspace import log_tail, metrics_series, plot_bytes, plot_names, read_scores

__all__ = [
    "ACTIVE_STATES",
    "TRANSITIONS",
    "Actor",
    "JobEvent",
    "JobRecord",
    "JobRepository",
    "JobService",
    "TransitionRefused",
    "allowed",
    "canonical_spec",
    "file_sha256",
    "is_final",
    "later",
    "log_tail",
    "metrics_series",
    "plot_bytes",
    "plot_names",
    "read_scores",
    "spec_changes",
    "spec_hash",
]

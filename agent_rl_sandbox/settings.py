"""The one settings object, read from the environment.

Environment variables (all optional):

- ``AGENT_RL_SANDBOX_HOME``: home folder for the store, sandboxes and reports
  (default ``~/.agent-rl-sandbox``).
- ``AGENT_RL_SANDBOX_DATABASE_URL``: SQLAlchemy URL (default ``sqlite:///<home>/store.db``);
  ``postgresql+psycopg://user@host/db`` for a team store.
- ``AGENT_RL_SANDBOX_TASK_DIRS``: extra task folders, separated by ``os.pathsep``.
- ``AGENT_RL_SANDBOX_ISOLATION``: ``auto`` (bubblewrap when installed), ``bwrap`` or ``none``.
- ``AGENT_RL_SANDBOX_WORKING_COPY``: ``auto`` (a copy-on-write overlay where one can be mounted,
  else a copy), ``overlay`` or ``copy``.
- ``AGENT_RL_SANDBOX_VERIFIER_ANSWER_QUANTUM_S``: ``sandbox_finish`` answers at a multiple of this
  many seconds after the hidden verifier started (default 5; 0 answers at once).
- ``AGENT_RL_SANDBOX_IDLE_SECONDS``: seconds without an action after which an open sandbox is
  cleaned up (default 3600).
- ``AGENT_RL_SANDBOX_WORKER_CONFIG``: the worker's stage configuration (default
  ``<home>/worker.toml``, else the shipped default that runs ``validate`` and ``train``).
- ``AGENT_RL_SANDBOX_JOB_EXPIRY_HOURS``: hours a training request waits for approval before it
  expires (default 72).
- ``AGENT_RL_SANDBOX_JOB_MAX_STEPS``, ``AGENT_RL_SANDBOX_JOB_MAX_TIMEOUT_S``,
  ``AGENT_RL_SANDBOX_JOB_MAX_GPU_HOURS``: the operator's limits on a job's budget caps
  (defaults 100000 steps, 86400 s, 24 GPU hours).
- ``AGENT_RL_SANDBOX_MODELS``: base model names the operator's model registry knows, comma-separated
  (a job's ``base_model`` is one of them or an existing local folder).
- ``AGENT_RL_SANDBOX_APPROVER``: the identity the ``jobs`` CLI records for a human decision (default:
  the OS user).
- ``AGENT_RL_SANDBOX_VLLM_URL``, ``AGENT_RL_SANDBOX_VLLM_BASE_MODEL``: the vLLM server adapters are
  deployed to (runtime LoRA updating on) and the name it serves the base model under; without
  them ``adapters deploy|enable|rollback`` are refused and the kill switch still works.
- ``AGENT_RL_SANDBOX_UI_TOKEN``: the web page's access token (``agent-rl-sandbox ui``); without it a
  random one is drawn at each start. Needed to bind the page beyond loopback.
- ``AGENT_RL_SANDBOX_HTTP_ALLOWED_HOSTS``, ``AGENT_RL_SANDBOX_HTTP_ALLOWED_ORIGINS``: comma-separated
  ``Host`` values (``mcp.example.org``, ``mcp.example.org:*``) and origins
  (``https://mcp.example.org``) the HTTP server accepts besides loopback (DNS-rebinding protection is
  always on: any other ``Host`` gets 421, any other ``Origin`` 403).
- ``AGENT_RL_SANDBOX_HTTP_MAX_REQUEST_BYTES``: largest HTTP request body (default 4 MiB; larger gets 413).
- ``AGENT_RL_SANDBOX_QUOTA_OPEN_SANDBOXES``, ``AGENT_RL_SANDBOX_QUOTA_RUNNING_COMMANDS``,
  ``AGENT_RL_SANDBOX_QUOTA_PENDING_TRAINING``, ``AGENT_RL_SANDBOX_QUOTA_STEPS_PER_MINUTE``: per-identity
  limits of the HTTP server (defaults 8, 4, 4, 6000; ``none`` for no limit).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


def _number(env, name: str, conv, alternative: str = ""):
    """``conv(env[name])``; a value that does not parse raises ``ValueError`` naming the variable
    and what it expects (``alternative`` is appended to that, e.g. `` (or none / off)``)."""
    try:
        return conv(env[name])
    except ValueError:
        kind = "a whole number" if conv is int else "a number"
        raise ValueError(f"{name}={env[name]!r} is not {kind}{alternative}") from None


HOOK_SECONDS = {"AGENT_RL_SANDBOX_HOOK_TIMEOUT": 10.0, "AGENT_RL_SANDBOX_HOOK_LINGER": 20.0}
"""The hook drainer's settings in seconds, and their defaults (``agents._drain``)."""


def hook_seconds(name: str, env=None) -> float:
    """The hook setting ``name`` (a key of :data:`HOOK_SECONDS`) in seconds: its default when unset
    or empty. Raises ``ValueError`` naming the variable when it is not a number of seconds >= 0."""
    env = os.environ if env is None else env
    raw = env.get(name, "")
    if not raw.strip():
        return HOOK_SECONDS[name]
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name}={raw!r} is not a number of seconds (0 or more, default {HOOK_SECONDS[name]:g})")
    return value


VERIFIER_ANSWER_QUANTUM_S = 5.0
"""Default of :attr:`Settings.verifier_answer_quantum_s` (seconds)."""


def _verifier_answer_quantum() -> float:
    """``AGENT_RL_SANDBOX_VERIFIER_ANSWER_QUANTUM_S`` when set (seconds, 0 or more), else
    :data:`VERIFIER_ANSWER_QUANTUM_S`; raises ``ValueError`` naming the variable for a bad value."""
    name = "AGENT_RL_SANDBOX_VERIFIER_ANSWER_QUANTUM_S"
    if not os.environ.get(name, "").strip():
        return VERIFIER_ANSWER_QUANTUM_S
    value = _number(os.environ, name, float)
    if not 0 <= value < float("inf"):
        raise ValueError(f"{name}={os.environ[name]!r} is not a number of seconds (0 or more)")
    return value


def _default_home() -> Path:
    return Path(os.environ.get("AGENT_RL_SANDBOX_HOME") or Path.home() / ".agent-rl-sandbox").expanduser()


class Settings(BaseModel):
    """Paths, store URL and limits for one server or CLI process. No module-level state: build one
    with :meth:`from_env` and pass it down."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    home: Path = Field(default_factory=_default_home)
    """Root folder for the SQLite store, sandboxes and reports."""
    database_url: str | None = None
    """SQLAlchemy URL; ``None`` means the SQLite file ``<home>/store.db``."""
    task_dirs: tuple[Path, ...] = ()
    data_dirs: tuple[Path, ...] = ()
    """Folders whose files the ``dataset_validate`` MCP tool may read, besides the server's working
    folder at start-up and ``<home>/exports`` (``AGENT_RL_SANDBOX_DATA_DIRS``, ``os.pathsep``-separated)."""
    """Extra task folders searched after the built-in tasks."""
    isolation: Literal["auto", "bwrap", "none"] = "auto"
    """Command isolation: ``auto`` uses bubblewrap when installed, else a plain subprocess."""
    working_copy: Literal["auto", "overlay", "copy"] = "auto"
    """How a sandbox's working copy is made: ``overlay`` mounts the task's cached base read-only
    under a per-sandbox copy-on-write layer (root only; creation and reset in milliseconds),
    ``copy`` copies the base's files, ``auto`` uses an overlay where the server can mount one
    (probed once) and copies otherwise (``AGENT_RL_SANDBOX_WORKING_COPY``)."""
    max_result_items: int = Field(default=50, ge=1)
    """Cap on list items in one tool result; the rest are counted and written to a report file."""
    max_output_bytes: int = Field(default=16_000, ge=256)
    """Cap on command output bytes returned in one tool result (the full output goes to a file)."""
    max_exec_seconds: float = Field(default=45.0, gt=0)
    """Upper bound on any single command's wall time, below clients' ~60 s tool-call cutoff."""
    verifier_answer_quantum_s: float = Field(default_factory=_verifier_answer_quantum, ge=0)
    """``sandbox_finish`` answers at the first multiple of this many seconds after the hidden
    verifier started (capped at the task's verifier budget), so the answer's timing does not carry
    how long the agent's code ran inside the verifier (a timing channel out of the one process that
    sees hidden calls). ``0`` answers at once (``AGENT_RL_SANDBOX_VERIFIER_ANSWER_QUANTUM_S``, read
    when the settings are built; the test suite's conftest sets it to 0, tests of the hold pass it)."""
    sandbox_idle_seconds: float = Field(default=3600.0, gt=0)
    """An open sandbox with no action for this long is cleaned up (processes killed, working copy
    removed, trajectory closed unpassed) the next time the server looks (``reap_idle``)."""

    worker_config: Path | None = None
    """The worker's stage-command file (TOML); ``None`` means ``<home>/worker.toml`` when it exists,
    else the shipped default (``agent_rl_sandbox.worker.DEFAULT_WORKER_TOML``)."""
    job_expiry_hours: float = Field(default=72.0, gt=0)
    """A training request not approved within this many hours becomes ``expired``."""
    job_max_steps: int = Field(default=100_000, ge=1)
    """Operator limit on a job's ``caps.max_steps``."""
    job_max_timeout_s: int = Field(default=86_400, ge=1)
    """Operator limit on a job's ``caps.timeout_s`` (wall time of the whole job)."""
    job_max_gpu_hours: float = Field(default=24.0, ge=0)
    """Operator limit on a job's ``caps.max_gpu_hours``."""
    models: tuple[str, ...] = ()
    """Base model names the operator's model registry knows (besides existing local model folders)."""
    approver: str | None = None
    """Identity recorded for decisions taken with the ``jobs`` CLI; ``None`` means the OS user."""
    vllm_url: str | None = None
    """Root URL of the vLLM server adapters are served from (``None``: no serving backend)."""
    vllm_base_model: str | None = None
    """The base model's served name on that server: where the kill switch routes a behaviour."""
    ui_token: str | None = Field(default=None, repr=False)
    """The web page's configured access token (``None``: a random one per start)."""

    http_allowed_hosts: tuple[str, ...] = ()
    """``Host`` header values the HTTP server accepts besides loopback (``name`` or ``name:*``), for
    a real hostname behind a proxy; every other ``Host`` is refused with 421 (DNS rebinding)."""
    http_allowed_origins: tuple[str, ...] = ()
    """``Origin`` values accepted besides loopback ones (``https://name``); others get 403."""
    http_max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Largest HTTP request body accepted (bytes); a larger one gets 413 before it is parsed."""
    quota_open_sandboxes: int | None = Field(default=8, ge=1)
    """Per identity (HTTP): open sandboxes at once (``None``: no limit)."""
    quota_running_commands: int | None = Field(default=4, ge=1)
    """Per identity, per server process: ``sandbox_exec`` commands running at once."""
    quota_pending_training: int | None = Field(default=4, ge=1)
    """Per identity: training requests awaiting approval, approved or queued."""
    quota_steps_per_minute: int | None = Field(default=6000, ge=1)
    """Per identity, per server process: steps logged with ``trajectory_log_step`` in any 60 s."""

    @classmethod
    def from_env(cls, **overrides) -> Settings:
        """Build settings from ``AGENT_RL_SANDBOX_*`` variables; keyword overrides win."""
        env = os.environ
        values: dict = {"home": _default_home()}
        if env.get("AGENT_RL_SANDBOX_DATABASE_URL"):
            values["database_url"] = env["AGENT_RL_SANDBOX_DATABASE_URL"]
        if env.get("AGENT_RL_SANDBOX_TASK_DIRS"):
            values["task_dirs"] = tuple(Path(p) for p in env["AGENT_RL_SANDBOX_TASK_DIRS"].split(os.pathsep) if p)
        if env.get("AGENT_RL_SANDBOX_DATA_DIRS"):
            values["data_dirs"] = tuple(Path(p) for p in env["AGENT_RL_SANDBOX_DATA_DIRS"].split(os.pathsep) if p)
        if env.get("AGENT_RL_SANDBOX_ISOLATION"):
            values["isolation"] = env["AGENT_RL_SANDBOX_ISOLATION"]
        if env.get("AGENT_RL_SANDBOX_WORKING_COPY"):
            values["working_copy"] = env["AGENT_RL_SANDBOX_WORKING_COPY"]
        if env.get("AGENT_RL_SANDBOX_IDLE_SECONDS"):
            values["sandbox_idle_seconds"] = _number(env, "AGENT_RL_SANDBOX_IDLE_SECONDS", float)
        if env.get("AGENT_RL_SANDBOX_WORKER_CONFIG"):
            values["worker_config"] = Path(env["AGENT_RL_SANDBOX_WORKER_CONFIG"])
        for name, conv in (
            ("job_expiry_hours", float),
            ("job_max_steps", int),
            ("job_max_timeout_s", int),
            ("job_max_gpu_hours", float),
        ):
            if env.get(f"AGENT_RL_SANDBOX_{name.upper()}"):
                values[name] = _number(env, f"AGENT_RL_SANDBOX_{name.upper()}", conv)
        if env.get("AGENT_RL_SANDBOX_MODELS"):
            values["models"] = tuple(m.strip() for m in env["AGENT_RL_SANDBOX_MODELS"].split(",") if m.strip())
        if env.get("AGENT_RL_SANDBOX_APPROVER"):
            values["approver"] = env["AGENT_RL_SANDBOX_APPROVER"]
        for key, name in (
            ("vllm_url", "AGENT_RL_SANDBOX_VLLM_URL"),
            ("vllm_base_model", "AGENT_RL_SANDBOX_VLLM_BASE_MODEL"),
            ("ui_token", "AGENT_RL_SANDBOX_UI_TOKEN"),
        ):
            if env.get(name):
                values[key] = env[name]
        for key in ("http_allowed_hosts", "http_allowed_origins"):
            raw = env.get(f"AGENT_RL_SANDBOX_{key.upper()}")
            if raw:
                values[key] = tuple(h.strip() for h in raw.split(",") if h.strip())
        if env.get("AGENT_RL_SANDBOX_HTTP_MAX_REQUEST_BYTES"):
            values["http_max_request_bytes"] = _number(env, "AGENT_RL_SANDBOX_HTTP_MAX_REQUEST_BYTES", int)
        for key in ("open_sandboxes", "running_commands", "pending_training", "steps_per_minute"):
            name = f"AGENT_RL_SANDBOX_QUOTA_{key.upper()}"
            raw = env.get(name)
            if raw:
                off = raw.strip().lower() in ("none", "off")
                values[f"quota_{key}"] = None if off else _number(env, name, int, " (or none / off for no limit)")
        for name in HOOK_SECONDS:  # read by the hook's drainer, checked here so every command names a bad one
            hook_seconds(name, env)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def db_url(self) -> str:
        """The effective SQLAlchemy URL."""
        return self.database_url or f"sqlite:///{self.home / 'store.db'}"

    @property
    def sandboxes_dir(self) -> Path:
        return self.home / "sandboxes"

    @property
    def reports_dir(self) -> Path:
        return self.home / "reports"

    @property
    def jobs_dir(self) -> Path:
        """Job workspaces (``<home>/jobs/<job id>/``) and ``results.csv``."""
        return self.home / "jobs"

    @property
    def adapters_dir(self) -> Path:
        """The route table (``routes.json``) the kill switch flips."""
        return self.home / "adapters"

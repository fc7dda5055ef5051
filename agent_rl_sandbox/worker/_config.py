"""The operator's stage configuration: which command each stage runs, and its timeout.

It comes from ``<home>/worker.toml`` (or the file named by ``AGENT_RL_SANDBOX_WORKER_CONFIG``) and
never from a job's request: a spec names a trainer and hyperparameters, and the stage command reads
them from ``job.json``; nothing in a spec becomes part of a command line. Without a file the
shipped default, :data:`DEFAULT_WORKER_TOML`, applies.

Format::

    grace_s = 5.0                        # SIGTERM -> SIGKILL grace period, seconds
    [stages.validate]
    command = ["{python}", "-m", "agent_rl_sandbox.worker.validate_stage"]
    timeout_s = 600

``{python}`` in a command stands for the worker's own interpreter; no other substitution is made.
The shipped default installs ``validate`` and ``train`` (:mod:`agent_rl_sandbox.trainers.train_stage`
under ``accelerate launch``).
Stages run in the order of :data:`STAGE_ORDER`; a stage without a ``[stages.NAME]`` table is "not
installed", and a job that reaches it fails with the reason ``stage_not_installed:NAME``.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STAGE_ORDER: tuple[str, ...] = ("validate", "baseline", "train", "post_eval", "gate")
"""The stages of a job, in the order they run."""

DEFAULT_WORKER_TOML = """\
# agent-rl-sandbox worker: stage commands (operator configuration; a job's request never sets these).
#
# Shipped, in order: `validate` (re-hash and re-validate the dataset), `baseline` (the policy agent
# plays the behaviour's held-out variants with the base model), `train` (TRL + PEFT LoRA through
# `accelerate launch`, one process), `post_eval` (the same held-out episodes with base + adapter) and
# `gate` (the job's gate on the post-training report, no regression against the baseline beyond
# --max-regression, held-out variants only). baseline, train and post_eval need the train extra
# (pip install -e '.[train]').
# To run your own stages (or train on many GPUs), copy this file to <home>/worker.toml and edit:
#
#   [stages.train]
#   command = ["{python}", "-m", "accelerate.commands.launch", "--config_file", "/etc/accelerate.yaml",
#              "-m", "agent_rl_sandbox.trainers.train_stage"]   # reads $AGENT_RL_SANDBOX_JOB_JSON
#   timeout_s = 3600
#
# `{python}` is the worker's interpreter. Each stage runs in the job's workspace, in its own
# process group; at its timeout it gets SIGTERM, then SIGKILL after `grace_s` seconds.

grace_s = 5.0

[stages.validate]
command = ["{python}", "-m", "agent_rl_sandbox.worker.validate_stage"]
timeout_s = 600

[stages.baseline]
command = ["{python}", "-m", "agent_rl_sandbox.trainers.eval_stage", "baseline", "--episodes", "1"]
timeout_s = 1800

[stages.train]
command = ["{python}", "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "agent_rl_sandbox.trainers.train_stage"]
timeout_s = 3600

[stages.post_eval]
command = ["{python}", "-m", "agent_rl_sandbox.trainers.eval_stage", "post_eval", "--episodes", "1"]
timeout_s = 1800

[stages.gate]
command = ["{python}", "-m", "agent_rl_sandbox.worker.gate_stage", "--max-regression", "0.0"]
timeout_s = 300
"""


class WorkerConfigError(ValueError):
    """The worker configuration file is unreadable or malformed (the message names the key)."""


@dataclass(frozen=True)
class StageCommand:
    """One configured stage."""

    name: str
    argv: tuple[str, ...]
    """The command line, ``{python}`` already replaced."""
    timeout_s: float


@dataclass(frozen=True)
class WorkerConfig:
    """Every configured stage and the kill grace period."""

    stages: dict[str, StageCommand]
    grace_s: float
    source: str
    """Where it came from: a file path or ``"built-in default"``."""

    def missing(self) -> list[str]:
        """Stages of :data:`STAGE_ORDER` with no command (not installed)."""
        return [s for s in STAGE_ORDER if s not in self.stages]


def parse_worker_config(text: str, *, source: str) -> WorkerConfig:
    """Parse the TOML ``text``. Raises :class:`WorkerConfigError` naming the bad key."""
    try:
        doc: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkerConfigError(f"{source}: not TOML ({exc}). Next step: fix the file's syntax.") from exc
    unknown = set(doc) - {"grace_s", "stages"}
    if unknown:
        raise WorkerConfigError(
            f"{source}: unknown keys {', '.join(map(repr, sorted(unknown)))}. Next step: keep grace_s and [stages.*]."
        )
    grace = doc.get("grace_s", 5.0)
    if not isinstance(grace, int | float) or isinstance(grace, bool) or grace < 0:
        raise WorkerConfigError(f"{source}: grace_s must be a number >= 0. Next step: set e.g. grace_s = 5.0.")
    stages: dict[str, StageCommand] = {}
    for name, table in (doc.get("stages") or {}).items():
        where = f"{source}: [stages.{name}]"
        if name not in STAGE_ORDER:
            raise WorkerConfigError(f"{where} is not a stage. Next step: use one of {', '.join(STAGE_ORDER)}.")
        if not isinstance(table, dict) or set(table) - {"command", "timeout_s"}:
            raise WorkerConfigError(f"{where} may hold only command and timeout_s. Next step: remove the rest.")
        cmd = table.get("command")
        if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) and a for a in cmd):
            raise WorkerConfigError(f"{where}: command must be a non-empty list of strings. Next step: fix it.")
        timeout = table.get("timeout_s", 3600)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise WorkerConfigError(f"{where}: timeout_s must be a number > 0. Next step: fix it.")
        argv = tuple(sys.executable if a == "{python}" else a for a in cmd)
        stages[name] = StageCommand(name=name, argv=argv, timeout_s=float(timeout))
    return WorkerConfig(stages=stages, grace_s=float(grace), source=source)


def load_worker_config(home: Path, path: Path | None = None) -> WorkerConfig:
    """The configuration at ``path``, else ``<home>/worker.toml``, else the shipped default.
    Raises :class:`WorkerConfigError` for an unreadable or malformed file (an explicit ``path``
    that does not exist included)."""
    target = path if path is not None else home / "worker.toml"
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        if path is not None:
            raise WorkerConfigError(f"{path}: no such file. Next step: create it or unset the setting.") from None
        return parse_worker_config(DEFAULT_WORKER_TOML, source="built-in default")
    except OSError as exc:
        raise WorkerConfigError(f"{target}: unreadable ({exc}). Next step: fix its permissions.") from exc
    return parse_worker_config(text, source=str(target))

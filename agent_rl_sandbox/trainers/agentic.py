"""The train stage's ``agentic_grpo`` hook: TRL's ``GRPOTrainer`` gets the sandbox environment
(:func:`~.environment.environment_class`) as its ``environment_factory``.

:func:`trainer_kwargs` is what :mod:`._run` merges over its common GRPO arguments for a plan whose
trainer is ``agentic_grpo``: the environment class (tools: the episode tools the job's rows
declare, else ``sandbox_exec`` + ``sandbox_finish``), and a training dataset whose rows name a
task variant (``task_id``) and carry an empty user turn, so the prompt is the sandbox's own
instruction, exactly what the policy agent shows at evaluation. Rows come from the plan's prompt
rows: a row's ``task_id`` when it has one, else the train variant whose instruction equals its
user turn; rows that match no train variant are dropped (a held-out variant never is a row).
The environment acts on the worker's store (``Settings.from_env()``), and each rollout is a
trajectory named ``grpo:<job id>``. The reward is the environment's ``get_reward()`` (the hidden
verifier's reward); the zero-variance refusal and the metrics are :mod:`._run`'s.
"""

from __future__ import annotations

import json
from typing import Any

from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS


class AgenticDataError(ValueError):
    """No usable row: none names or matches a train variant (the message says what to export)."""


def _user_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "".join(str(m.get("content") or "") for m in prompt if isinstance(m, dict) and m.get("role") == "user")
    return str(prompt or "")


def environment_rows(rows: list[dict[str, Any]], tasks: dict[str, Any]) -> list[dict[str, Any]]:
    """``{"prompt": [{"role": "user", "content": ""}], "task_id"}`` per usable row (see the module
    docstring). Raises :class:`AgenticDataError` when none is usable."""
    by_instruction = {t.instruction.strip(): tid for tid, t in tasks.items() if t.config.split == "train"}
    out = []
    for row in rows:
        tid = row.get("task_id")
        if not (isinstance(tid, str) and tid in tasks and tasks[tid].config.split == "train"):
            tid = by_instruction.get(_user_text(row.get("prompt")).strip())
        if tid is not None:
            out.append({"prompt": [{"role": "user", "content": ""}], "task_id": tid})
    if not out:
        raise AgenticDataError(
            "no training row names or matches a train task variant. Next step: export the grpo or sft format "
            "of sandbox trajectories on train variants"
        )
    return out


def tools_of(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The episode tools the rows declare (``tools`` column), else exec + finish."""
    for row in rows:
        tools = row.get("tools")
        if isinstance(tools, str):
            try:
                tools = json.loads(tools)
            except ValueError:
                continue
        if isinstance(tools, list) and tools:
            names = tuple(str((t.get("function") or {}).get("name")) for t in tools if isinstance(t, dict))
            if names and all(n in EPISODE_TOOLS for n in names):
                return names
    return ("sandbox_exec", "sandbox_finish")


def trainer_kwargs(plan: Any, paths: Any) -> dict[str, Any]:
    """``GRPOTrainer`` keyword arguments for an ``agentic_grpo`` plan: ``environment_factory`` and
    ``train_dataset`` (see the module docstring). Raises :class:`AgenticDataError`."""
    from datasets import Dataset

    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings
    from agent_rl_sandbox.trainers._data import read_rows
    from agent_rl_sandbox.trainers.environment import environment_class

    rows = read_rows(plan.dataset_path, "agentic_grpo")
    # in-process rollouts: the policy reads no clock, so sandbox_finish's answer hold (a timing
    # channel's cure for MCP clients, Settings.verifier_answer_quantum_s) would only cost ~5 s per episode
    services = Services.build(Settings.from_env(verifier_answer_quantum_s=0.0))
    env_rows = environment_rows(rows, services.sandbox.tasks)
    tools = tools_of(rows)
    return {
        "environment_factory": environment_class(services, tools=tools, agent_name=f"grpo:{plan.job_id}"),
        "train_dataset": Dataset.from_list(env_rows),
    }

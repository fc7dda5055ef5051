"""Signals for the route decision, derived from the store and the task definitions.

:func:`derive_signals` reads finished trajectories of a behaviour (or one task variant) and the
tasks' own files, and returns what :func:`~agent_rl_sandbox.tools.routes.recommend` needs:

- per variant: passed and failed attempts, split, whether every attempt got the same reward;
- on train variants: passing (= demonstrations) and failing counts, the DPO pairs an export would
  yield (one per passing and failing trajectory of the same variant: ``min(passed, failed)``), the
  KTO rows (every finished attempt) and the share of attempt groups (a variant with two or more
  attempts) whose rewards have zero variance;
- on held-out variants: the attempts an eval gate would measure;
- from the tasks: a verifiable reward (a hidden verifier criterion), multi-turn tool use (the
  oracle makes more than two tool calls) and rule-likeness (the oracle's action sequence, tool and
  arguments with file contents resolved, is identical across every variant).

Raises :class:`RouteInputError` for an unknown behaviour or task id.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_rl_sandbox.schemas.routes import VariantCounts
from agent_rl_sandbox.schemas.trajectory import TrajectorySummary
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox._task import task_behaviours

VERIFIER_CRITERIA = frozenset({"verifier_exit_code"})
"""Criterion types that make a task's reward verifiable (a program decides, not a judge)."""


class RouteInputError(ActionError):
    """Bad input to the route recommender; the message names the argument."""


class SummarySource(Protocol):
    """What the deriver reads from the store (``TrajectoryRepository.iter_summaries``)."""

    def iter_summaries(self, **filters: Any) -> Iterable[TrajectorySummary]: ...


class TaskView(Protocol):
    """What the deriver reads of a task (``tools.sandbox.Task``)."""

    @property
    def id(self) -> str: ...

    @property
    def config(self) -> Any: ...

    @property
    def reward_spec(self) -> Any: ...

    def scripted(self, name: str) -> tuple[Any, Any]: ...


@dataclass
class Derived:
    """Derived signal values (``RouteSignals`` field -> value) and where each came from."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    behaviour: str | None = None
    task_ids: list[str] = field(default_factory=list)

    def put(self, name: str, value: Any, source: str) -> None:
        self.values[name] = value
        self.sources[name] = source


def _oracle_actions(task: TaskView) -> list[tuple[str, str]] | None:
    """The oracle's calls as comparable ``(tool, canonical args)``; ``None`` without an oracle."""
    try:
        script, folder = task.scripted("oracle")
    except ActionError:
        return None
    out = []
    for call in script.calls:
        args = dict(call.args)
        if call.content_from:
            try:
                args["content"] = (folder / call.content_from).read_text(encoding="utf-8")
            except OSError:
                args["content"] = f"<unreadable {call.content_from}>"
        out.append((call.tool, json.dumps(args, sort_keys=True)))
    return out


def variant_totals(variants: Mapping[str, VariantCounts]) -> dict[str, int]:
    """Counts over per-variant attempts: on train variants the passing (= demonstrations) and
    failing attempts, the DPO pairs an export would yield (``min(passed, failed)`` per variant) and
    the KTO rows (every attempt); on held-out variants the attempts a gate would measure."""
    train = [v for v in variants.values() if v.split == "train"]
    return {
        "passing": sum(v.passed for v in train),
        "failing": sum(v.failed for v in train),
        "demonstrations": sum(v.passed for v in train),
        "preference_pairs": sum(min(v.passed, v.failed) for v in train),
        "kto_rows": sum(v.passed + v.failed for v in train),
        "heldout_attempts": sum(v.passed + v.failed for v in variants.values() if v.split == "heldout"),
    }


def derive_signals(
    store: SummarySource,
    tasks: Mapping[str, TaskView],
    *,
    behaviour: str | None = None,
    task_id: str | None = None,
    agent_name: str | None = None,
) -> Derived:
    """Signals for ``behaviour`` (every variant) or ``task_id`` (that variant, plus its behaviour's
    held-out variants for the gate). Raises :class:`RouteInputError` when neither is known."""
    behaviours = task_behaviours(tasks)
    if task_id is not None:
        if task_id not in tasks:
            raise RouteInputError(
                f"unknown task_id {task_id!r}", "pass a task id from list_tasks (or `agent-rl-sandbox tasks list`)"
            )
        task_behaviour = tasks[task_id].config.behaviour
        if behaviour is not None and behaviour != task_behaviour:
            raise RouteInputError(
                f"task_id {task_id!r} belongs to behaviour {task_behaviour!r}, not {behaviour!r}",
                "pass one of them, or both consistently",
            )
        behaviour = task_behaviour
    elif behaviour is not None and behaviour not in behaviours:
        raise RouteInputError(f"unknown behaviour {behaviour!r}", f"pass one of: {', '.join(behaviours)}")
    out = Derived(behaviour=behaviour)
    if behaviour is None:
        return out
    family = {tid: t for tid, t in tasks.items() if t.config.behaviour == behaviour}
    counted = {task_id: family[task_id]} if task_id is not None else family
    counted |= {tid: t for tid, t in family.items() if t.config.split == "heldout"}
    out.task_ids = sorted(counted)

    rewards: dict[str, list[float]] = defaultdict(list)
    passed: dict[str, int] = defaultdict(int)
    filters: dict[str, Any] = {"behaviour": behaviour, "status": "finished"}
    if agent_name is not None:
        filters["agent_name"] = agent_name
    for s in store.iter_summaries(**filters):
        if s.task_id not in counted or s.passed is None:
            continue  # unscored or another variant
        rewards[s.task_id].append(s.reward or 0.0)
        passed[s.task_id] += bool(s.passed)
    variants: dict[str, VariantCounts] = {}
    for tid in sorted(counted):
        r = rewards.get(tid, [])
        variants[tid] = VariantCounts(
            passed=passed[tid],
            failed=len(r) - passed[tid],
            split="heldout" if counted[tid].config.split == "heldout" else "train",
            zero_variance=(max(r) == min(r)) if len(r) >= 2 else None,
        )
    train = [v for v in variants.values() if v.split == "train"]
    out.put("variants", variants, "store")
    for name, value in variant_totals(variants).items():
        out.put(name, value, "store")
    groups = [v for v in train if v.zero_variance is not None]
    if groups:
        out.put("zero_variance_fraction", round(sum(bool(v.zero_variance) for v in groups) / len(groups), 4), "store")

    specs = [t.reward_spec for t in family.values()]
    out.put("verifiable_reward", any(c.type in VERIFIER_CRITERIA for s in specs for c in s.criteria), "tasks")
    oracles = [_oracle_actions(t) for _, t in sorted(family.items())]
    known = [o for o in oracles if o is not None]
    if known:
        out.put("multi_turn_tool_use", max(len(o) for o in known) > 2, "tasks")
        out.put("fixed_rule", len(known) >= 2 and all(o == known[0] for o in known), "tasks")
    return out

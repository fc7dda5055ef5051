"""What a valid Port Daddy trajectory suite is: one reader for ``validate`` and ``score``.

A suite is valid when the project's suite model (``agent_rl_sandbox.schemas.reward.PortDaddySuite``)
reads it and no rule below finds a value that Port Daddy's harness (its JavaScript
``evaluateTrajectorySuite``, ``skills/agent-rl-sandbox-trainer`` in curiositech/port-daddy) would read
as something other than what it says. The dataset validator reports these findings for a
``trajectory_suite`` row; the evals harness validates a suite with that validator before scoring it,
so the two never disagree about a suite and give the same finding (code and message).

Rules (each value is forbidden by Port Daddy's ``trajectory-suite.schema.json`` and silently misread by
its harness; the code is ``wrong_type`` where the suite's JSON Schema also rejects the value, else
``port_daddy_misread``):

- ``rewardSpec.actionOrderRequired``, ``rewardSpec.requireValidatedUnhooksForDeployment``: JSON ``true``
  or ``false``. Port Daddy tests ``!== false``, so ``"false"``, ``0`` and ``null`` all read as true
  (pydantic alone would read ``"false"`` and ``0`` as false).
- ``unhooks[].validated``: ``true`` or ``false``; Port Daddy counts only ``=== true`` (``"true"`` is not).
- ``rewardSpec.defaultPassReward``, ``tasks[].passReward``: JSON numbers, never strings or booleans
  (Port Daddy applies ``Number()``: ``""`` is 0, ``true`` is 1, ``"5%"`` is NaN).
- ``exitCode`` of ``tasks[].expectedEvidence[]`` and ``trajectories[].artifacts[]``: a JSON number or no
  key. A string or boolean is ``wrong_type``; ``null`` is ``port_daddy_misread``: ``Number(null)`` is 0,
  so a null artifact exit code passes an ``exitCode: 0`` check and a null expected one demands 0.
- ``tasks[].expectedFinalContains``: a string, or a list of exactly one string. Port Daddy checks
  ``[value]`` with ``String()``, so ``["a", "b"]`` would need the text ``a,b`` and ``[]`` matches any
  artifact.
- ``rewardSpec`` keys: only the three above. Port Daddy's schema forbids others and its harness ignores
  them, so a misspelt flag silently keeps its default.

Warnings (Port Daddy scores these suites, and so does ``score``): a task id that repeats
(``duplicate_task_id``: every task with that id scores the last trajectory naming it) and a trajectory
whose ``taskId`` names no task (``unknown_task_id``: it is not scored).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_FLAGS = ("actionOrderRequired", "requireValidatedUnhooksForDeployment")
_SPEC_KEYS = frozenset({"actionOrderRequired", "defaultPassReward", "requireValidatedUnhooksForDeployment"})


@dataclass
class SuiteRead:
    """The outcome of reading one suite: the model (``None`` when any error), errors and warnings.

    Each finding is ``(json_path, code, message)``; paths look like ``$.tasks[0].passReward``.
    """

    suite: Any = None
    """The ``PortDaddySuite`` when there is no error."""
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str, str]] = field(default_factory=list)


def read_suite(doc: Any) -> SuiteRead:
    """Check a parsed suite document against the suite model and the rules of the module docstring.

    ``doc`` is any parsed JSON value. Rule findings come first (document order), then the model's own
    errors at paths no rule reported. Never raises (a document nested too deeply for the model gives a
    ``too_deep`` error).
    """
    from pydantic import ValidationError

    from agent_rl_sandbox.schemas.reward import PortDaddySuite

    read = SuiteRead()
    if type(doc) is dict:
        _rules(doc, read.errors)
        _references(doc, read.warnings)
    flagged = {path for path, _, _ in read.errors}
    try:
        suite = PortDaddySuite.model_validate(doc)
    except ValidationError as e:
        for err in e.errors():
            path = _path(err["loc"])
            if path not in flagged:
                read.errors.append((path, _code(err), str(err["msg"])[:200]))
        return read
    except RecursionError:
        read.errors.append(("$", "too_deep", "suite nested too deeply to read"))
        return read
    if not read.errors:
        read.suite = suite
    return read


def _path(loc: Any) -> str:
    out = "$"
    for part in loc:
        if isinstance(part, str) and part.startswith("function-"):
            continue  # pydantic names the validator function; not a place in the document
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _code(err: Any) -> str:
    kind = err["type"]
    if kind == "missing":
        return "missing_key"
    if kind == "too_short" and err.get("input") == []:
        return "empty_list"
    if kind.endswith("_type") or kind.endswith("_parsing") or kind == "model_attributes_type":
        return "wrong_type"
    return "bad_value"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return str(value).lower()
    if type(value) is str:
        return f"the string {value!r:.40}"
    if type(value) in (int, float):
        return f"the number {value!r:.40}"
    return "a list" if type(value) is list else "an object"


_AS_TRUE = 'Port Daddy reads every value but false as true ("false", 0 and null included)'
_ONLY_TRUE = 'Port Daddy counts an unhook only when validated is exactly true ("true" and 1 are not)'


def _flag(obj: dict, key: str, where: str, out: list, reads: str = _AS_TRUE) -> None:
    if key in obj and type(obj[key]) is not bool:
        out.append((f"{where}.{key}", "wrong_type", f"{key} must be true or false, got {_describe(obj[key])}: {reads}"))


def _number(obj: dict, key: str, where: str, out: list) -> None:
    if key in obj and type(obj[key]) in (str, bool):
        out.append(
            (
                f"{where}.{key}",
                "wrong_type",
                f"{key} must be a number, got {_describe(obj[key])}: Port Daddy reads it with Number(), "
                'where "" is 0, true is 1 and "5%" is NaN',
            )
        )


def _exit_code(obj: dict, where: str, out: list, artifact: bool) -> None:
    if "exitCode" not in obj:
        return
    value = obj["exitCode"]
    if value is None:
        reads = (
            "this artifact would pass an exitCode 0 check; leave the key out when the exit code is unknown"
            if artifact
            else "this check would demand exit code 0; give a number or leave the key out"
        )
        out.append(
            (
                f"{where}.exitCode",
                "port_daddy_misread",
                f"exitCode is null: Port Daddy reads Number(null) as 0, so {reads}",
            )
        )
    elif type(value) in (str, bool):
        out.append(
            (
                f"{where}.exitCode",
                "wrong_type",
                f"exitCode must be a number, got {_describe(value)}: Port Daddy compares Number() of both sides, "
                'where "" and false are 0',
            )
        )


def _rules(doc: dict, out: list) -> None:
    spec = doc.get("rewardSpec")
    if type(spec) is dict:
        for key in spec:
            if key not in _SPEC_KEYS:
                out.append(
                    (
                        f"$.rewardSpec.{key}",
                        "port_daddy_misread",
                        f"rewardSpec has no key {key!r:.40}: Port Daddy ignores it, so a misspelt flag silently "
                        "keeps its default; use actionOrderRequired, defaultPassReward or "
                        "requireValidatedUnhooksForDeployment",
                    )
                )
        for key in _FLAGS:
            _flag(spec, key, "$.rewardSpec", out)
        _number(spec, "defaultPassReward", "$.rewardSpec", out)
    tasks = doc.get("tasks")
    for i, task in enumerate(tasks if type(tasks) is list else []):
        if type(task) is not dict:
            continue
        where = f"$.tasks[{i}]"
        _number(task, "passReward", where, out)
        evidence = task.get("expectedEvidence")
        for j, ev in enumerate(evidence if isinstance(evidence, list) else []):
            if type(ev) is dict:
                _exit_code(ev, f"{where}.expectedEvidence[{j}]", out, artifact=False)
        final = task.get("expectedFinalContains")
        if type(final) is list and len(final) != 1:
            out.append(
                (
                    f"{where}.expectedFinalContains",
                    "port_daddy_misread",
                    f"expectedFinalContains is a list of {len(final)}: Port Daddy checks it as one string, "
                    'String(list), so ["a", "b"] would need the text "a,b" and [] matches any artifact; '
                    "give one string, or list the strings in expectedEvidence[].contains",
                )
            )
    trajs = doc.get("trajectories")
    for i, traj in enumerate(trajs if type(trajs) is list else []):
        arts = traj.get("artifacts") if type(traj) is dict else None
        for j, art in enumerate(arts if type(arts) is list else []):
            if type(art) is dict:
                _exit_code(art, f"$.trajectories[{i}].artifacts[{j}]", out, artifact=True)
    unhooks = doc.get("unhooks")
    for i, unhook in enumerate(unhooks if type(unhooks) is list else []):
        if type(unhook) is dict:
            _flag(unhook, "validated", f"$.unhooks[{i}]", out, _ONLY_TRUE)


def _references(doc: dict, out: list) -> None:
    tasks = doc.get("tasks")
    ids: dict[str, int] = {}
    for i, task in enumerate(tasks if type(tasks) is list else []):
        tid = task.get("id") if type(task) is dict else None
        if type(tid) is str:
            if tid in ids:
                out.append(
                    (
                        f"$.tasks[{i}].id",
                        "duplicate_task_id",
                        f"task id {tid!r:.40} repeats task {ids[tid]}; both score the last trajectory naming it",
                    )
                )
            else:
                ids[tid] = i
    trajs = doc.get("trajectories")
    if type(tasks) is not list:
        return
    for i, traj in enumerate(trajs if type(trajs) is list else []):
        tid = traj.get("taskId") if type(traj) is dict else None
        if type(tid) is str and tid not in ids:
            out.append(
                (
                    f"$.trajectories[{i}].taskId",
                    "unknown_task_id",
                    f"taskId {tid!r:.40} names no task of the suite; it is not scored",
                )
            )

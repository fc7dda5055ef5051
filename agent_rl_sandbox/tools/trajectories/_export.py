"""Exports: training datasets (TRL, MiniMind), ATIF and Port Daddy suites, each with a manifest.

Every export selects finished trajectories with the same filters as ``trajectory_list``, then:

- **never** puts a held-out trajectory into a training format (stored ``split == "heldout"``, or its
  task is held out in the task registry now); they are counted as ``skipped_heldout``. Only the
  non-training formats (``atif``, ``suite``) can include them, on request.
- leaves out trajectories whose task is unknown (no task id, or one the task registry does not hold:
  nothing says they are not a held-out answer in disguise), counted as ``skipped_unknown_task``, unless
  ``include_unknown_tasks`` is set; the manifest's filters record the flag.
- builds rows with :mod:`._convert` (no fabricated tool results: a conversation is cut at the first call
  that has none and counted ``truncated_missing_result``, or dropped when nothing trainable remains);
- passes every row through the secret redactor once more (counted in the manifest's ``redactions``);
- writes ``<export_id>/<data file>`` and ``<export_id>/manifest.json`` (source ids, filters, counts, hashes).

Formats (``FORMATS``; file names and validator kinds in :class:`FormatInfo`):

``sft``
    TRL conversational language modelling with tools: ``{"messages": [...], "tools": "<JSON>"}``, one row
    per trajectory with ``reward >= min_reward``. Tool calls are ``{"id", "type": "function", "function":
    {"name", "arguments": "<JSON object as a string>"}}`` and each result is ``{"role": "tool",
    "tool_call_id", "name", "content"}``. ``tools`` and ``arguments`` are JSON strings on purpose: TRL
    accepts both (it ``json.loads`` a string ``tools``; templates take string arguments), and strings
    survive Arrow, which would otherwise merge every tool's argument keys into one struct and read each
    call back with the other tools' keys set to null.
``dpo``
    TRL preference, conversational with explicit prompt: ``{"prompt", "chosen", "rejected", "tools"}``.
    One pair per passing and failing trajectory of the same task variant (``task_id``), each trajectory
    used at most once, oldest first; the two prompts (system and user turns before the first assistant
    turn) must be identical.
``kto``
    TRL unpaired preference: ``{"prompt", "completion", "label", "tools"}`` with ``label = passed``.
``grpo``
    TRL prompt-only: ``{"prompt": [...], "task_id", "behaviour"}``, one row per task variant, so a reward
    function or environment can rebuild the sandbox from ``task_id``.
``minimind_sft`` / ``minimind_dpo`` / ``minimind_agentic``
    MiniMind's ``{"conversations"}``, ``{"chosen", "rejected"}`` and ``{"conversations", "gt"}`` rows
    (tools and tool calls as JSON strings, per MiniMind's README). MiniMind's DPO loader reads plain
    conversations that differ only in the last assistant turn and passes no tools to the template, so a
    pair is *step-level*: the shared history up to the first assistant turn where the passing and the
    failing trajectory act differently, then each one's turn there, with tool calls and results written
    as the ``<tool_call>``/``<tool_response>`` text the Qwen-style template renders. Agentic rows end with
    the README's placeholder assistant turn ``"无"`` (the loader drops it) and carry ``gt = [task_id]``:
    the verification target of a coding task is its hidden verifier, reached through the task id.
``atif``
    One ATIF v1.5 document per line (RL fields in ``extra``; the store's score report of a scored
    trajectory in ``extra.store_score``), each signed on its own (below).
``suite``
    One Port Daddy trajectory-suite JSON document (``agent``, ``rewardSpec``, ``tasks``, ``trajectories``
    with ``actions``, ``unhooks``), signed (below). So that ``score suite.json --gate NAME`` gives the
    store's verdict and not Port Daddy's "nothing expected scores 1", every task expects one artifact,
    ``{"kind": "store_verdict", "status": "passed"}``, and every trajectory carries its store verdict as
    that artifact (``status`` ``passed``, ``failed`` or ``unscored``; ``content`` the reward) plus the
    store's score report (``storeScore``). ``score`` counts ``store_verdict`` artifacts and ``storeScore``
    only when the suite's signature verifies; in any other suite they are dropped (with a warning), so
    an edited verdict fails its task instead of passing it.

Exports cannot launder a verdict: ``atif`` and ``suite`` exports are signed with HMAC-SHA256 over their
canonical content, with the home's ``export.key`` (created, mode 0600, on the first export; never
exported). Scheme and key handling: :mod:`agent_rl_sandbox.tools.formats.signing`. A verified export is
scored exactly as the store scores it; an unverified or altered one is self-reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.trajectory import ExportFile, ExportManifest, TrajectorySummary
from agent_rl_sandbox.tools._caller import OPERATOR_ID, Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.formats.signing import SignedKind, sign
from agent_rl_sandbox.tools.formats.suite import STORE_SCORE_FIELD, VERDICT_EXPECTATION, verdict_artifact
from agent_rl_sandbox.tools.store import TrajectoryRepository, new_id, normalise_time, utcnow
from agent_rl_sandbox.tools.trajectories._atif import atif_document
from agent_rl_sandbox.tools.trajectories._convert import (
    Conversation,
    conversation,
    encode_arguments,
    first_divergence,
    minimind_messages,
    text_only_messages,
)

SIGNED_FORMATS: dict[str, SignedKind] = {"atif": "atif", "suite": "suite"}
"""Exports signed with the home's export key, and the signature kind of each."""
MINIMIND_PLACEHOLDER = "无"
"""The final assistant placeholder MiniMind's README uses for RLAIF/agentic prompt rows."""


@dataclass(frozen=True)
class FormatInfo:
    name: str
    training: bool
    kind: str
    """The dataset validator's kind for the data file."""
    file: str
    description: str


FORMATS: dict[str, FormatInfo] = {
    f.name: f
    for f in (
        FormatInfo("sft", True, "trl.language_modeling", "sft.jsonl", "TRL messages + tools, one row per trajectory"),
        FormatInfo("dpo", True, "trl.preference", "dpo.jsonl", "TRL prompt/chosen/rejected from pass/fail pairs"),
        FormatInfo("kto", True, "trl.unpaired_preference", "kto.jsonl", "TRL prompt/completion/label"),
        FormatInfo("grpo", True, "trl.prompt_only", "grpo.jsonl", "TRL prompt-only rows with task_id"),
        FormatInfo("minimind_sft", True, "minimind.sft", "minimind_sft.jsonl", "MiniMind conversations"),
        FormatInfo("minimind_dpo", True, "minimind.dpo", "minimind_dpo.jsonl", "MiniMind chosen/rejected"),
        FormatInfo(
            "minimind_agentic", True, "minimind.agentic", "minimind_agentic.jsonl", "MiniMind agentic rows with gt"
        ),
        FormatInfo("atif", False, "atif", "trajectories.atif.jsonl", "ATIF v1.5 documents, one per line"),
        FormatInfo("suite", False, "trajectory_suite", "suite.json", "Port Daddy trajectory suite JSON"),
    )
}


@dataclass
class ExportOptions:
    """What to export. Filters match ``trajectory_list``'s."""

    format: str
    task_id: str | None = None
    behaviour: str | None = None
    agent_name: str | None = None
    origin: str | None = None
    created_after: str | None = None
    created_before: str | None = None
    min_reward: float | None = 1.0
    """SFT: rows from trajectories with ``reward >= min_reward`` (``None``: every finished trajectory,
    scored or not). DPO: the chosen side must also reach it. KTO/GRPO/ATIF/suite ignore it."""
    include_heldout: bool = False
    """Only for ``atif`` and ``suite`` (evaluation material); a training format refuses it."""
    include_running: bool = False
    """Only for ``atif`` and ``suite``: also export trajectories that are still running."""
    include_unknown_tasks: bool = False
    """Also export trajectories with no task id or a task the registry does not know (off by default:
    a self-logged trajectory without a task may carry a held-out solution)."""
    include_self_reported: bool = True
    """Also export self-reported trajectories (see :func:`trust_of`: no reward from verified server
    state). The operator's CLI keeps them by default and the manifest counts them; an MCP agent's
    ``trajectory_export`` leaves them out unless it asks (``TrajectoryExportInput``)."""

    def filters(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in ("task_id", "behaviour", "agent_name", "origin", "created_after", "created_before")
            if getattr(self, k) is not None
        }


def store_selection_options(selection: Mapping[str, Any]) -> ExportOptions:
    """The export a training job's store selection stands for (a canonical spec's ``dataset`` with
    ``kind == "store"``): what the worker materialises and what ``training_request`` counts.

    An omitted ``min_reward`` (stored as ``None``) means the export's default, passing trajectories
    only (``None`` would read as "every finished trajectory, scored or not": failing episodes would
    become SFT data); self-logged trajectories never count (formats that ignore ``min_reward``,
    grpo prompts and kto, would otherwise take fabricated ones); ``created_before`` is the request
    time the spec carries (the rows the approver could see)."""
    return ExportOptions(
        format=str(selection["export"]),
        behaviour=selection.get("behaviour"),
        task_id=selection.get("task_id"),
        agent_name=selection.get("agent_name"),
        created_before=selection.get("created_before"),
        min_reward=1.0 if selection.get("min_reward") is None else float(selection["min_reward"]),
        include_self_reported=False,
    )


@dataclass
class ExportResult:
    manifest: ExportManifest
    directory: Path
    data_path: Path
    manifest_path: Path


Rows = Iterator[tuple[dict[str, Any], list[str]]]

SERVER_SCORED = "server_scored"
SELF_REPORTED = "self_reported"


def trust_of(s: TrajectorySummary) -> str:
    """``"server_scored"`` when the trajectory has a reward: only the sandbox service sets one, scoring
    the recorded tree and hidden verifier (or closing it as failed); claims in the final message are
    never rewarded (``self_report_only`` flags them, the reward stays the server's). Else
    ``"self_reported"``: agent-logged (``trajectory_start``/``trajectory_log_step``) or imported, whose
    reward is unset whatever the agent logs. Reads the stored summary only."""
    return SERVER_SCORED if s.reward is not None else SELF_REPORTED


def _owner_kind(caller: Caller | None, owner: str | None) -> str:
    if caller is not None and not caller.operator and caller.owns(owner):
        return "caller"
    return "operator_or_imported" if owner in (None, OPERATOR_ID) else "agent"


def _conv_counts(conv: Conversation, counts: Counter) -> None:
    if conv.skipped_self_logged:
        counts["self_logged_steps_left_out"] += conv.skipped_self_logged
    if conv.skipped_system:
        counts["system_steps_left_out"] += conv.skipped_system
    if conv.merged_turns:
        counts["turns_merged"] += conv.merged_turns
    if conv.empty_results:
        counts["empty_results_marked"] += conv.empty_results


def _usable(conv: Conversation, counts: Counter) -> bool:
    """Count truncation; ``False`` (and count why) when the conversation has nothing to train on."""
    if not conv.has_assistant:
        counts["dropped_missing_result" if conv.truncated else "dropped_no_assistant_turn"] += 1
        return False
    if conv.truncated:
        counts["truncated_missing_result"] += 1
    return True


def _reward_ok(s: TrajectorySummary, min_reward: float | None, counts: Counter) -> bool:
    if min_reward is None:
        return True
    if s.reward is None:
        counts["skipped_unscored"] += 1
        return False
    if s.reward < min_reward:
        counts["skipped_below_min_reward"] += 1
        return False
    return True


def _tools_json(tools: list[dict]) -> str:
    return json.dumps(tools, ensure_ascii=False)


def _merge_tools(*lists: list[dict]) -> list[dict]:
    out, seen = [], set()
    for tools in lists:
        for t in tools:
            name = (t.get("function") or {}).get("name")
            if name not in seen:
                seen.add(name)
                out.append(t)
    return out


def _by_task(selected: list[TrajectorySummary], counts: Counter) -> dict[str, list[TrajectorySummary]]:
    groups: dict[str, list[TrajectorySummary]] = {}
    for s in selected:
        if s.task_id is None:
            counts["skipped_no_task_id"] += 1
            continue
        groups.setdefault(s.task_id, []).append(s)
    return groups


def _strip(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in messages]


# -- builders -----------------------------------------------------------------------------------
def _sft(store: TrajectoryRepository, selected, opts: ExportOptions, counts: Counter, *, minimind: bool) -> Rows:
    for s in selected:
        if not _reward_ok(s, opts.min_reward, counts):
            continue
        conv = conversation(store.get(s.session_id))
        _conv_counts(conv, counts)
        if not _usable(conv, counts):
            continue
        if minimind:
            row: dict[str, Any] = {"conversations": minimind_messages(conv.messages, conv.tools)}
        else:
            row = {"messages": encode_arguments(conv.messages), "tools": _tools_json(conv.tools)}
        yield row, [s.session_id]


def _pairs(store: TrajectoryRepository, selected, opts: ExportOptions, counts: Counter, *, minimind: bool) -> Rows:
    for _task, group in sorted(_by_task(selected, counts).items()):
        chosen, rejected = [], []
        for s in group:
            if s.passed is None:
                counts["skipped_unscored"] += 1
            elif s.passed is False:
                rejected.append(s)
            elif _reward_ok(s, opts.min_reward, counts):
                chosen.append(s)
        n = min(len(chosen), len(rejected))
        if len(chosen) > n:
            counts["unpaired_passing"] += len(chosen) - n
        if len(rejected) > n:
            counts["unpaired_failing"] += len(rejected) - n
        for good, bad in zip(chosen[:n], rejected[:n], strict=True):
            cg, cb = conversation(store.get(good.session_id)), conversation(store.get(bad.session_id))
            _conv_counts(cg, counts)
            _conv_counts(cb, counts)
            if not (_usable(cg, counts) & _usable(cb, counts)):
                counts["pairs_dropped"] += 1
                continue
            if not cg.prompt or _strip(cg.prompt) != _strip(cb.prompt):
                counts["pairs_dropped_prompt_mismatch"] += 1
                continue
            tools = _merge_tools(cg.tools, cb.tools)
            if minimind:
                a, b = text_only_messages(cg.messages), text_only_messages(cb.messages)
                k = first_divergence(a, b)
                if k is None:
                    counts["pairs_dropped_no_assistant_divergence"] += 1
                    continue
                row: dict[str, Any] = {"chosen": a[: k + 1], "rejected": b[: k + 1]}
            else:
                row = {
                    "prompt": encode_arguments(cg.prompt),
                    "chosen": encode_arguments(cg.completion),
                    "rejected": encode_arguments(cb.completion),
                    "tools": _tools_json(tools),
                }
            yield row, [good.session_id, bad.session_id]


def _kto(store: TrajectoryRepository, selected, opts: ExportOptions, counts: Counter) -> Rows:
    for s in selected:
        if s.passed is None:
            counts["skipped_unscored"] += 1
            continue
        conv = conversation(store.get(s.session_id))
        _conv_counts(conv, counts)
        if not _usable(conv, counts):
            continue
        if not conv.prompt:
            counts["dropped_no_prompt"] += 1
            continue
        yield (
            {
                "prompt": encode_arguments(conv.prompt),
                "completion": encode_arguments(conv.completion),
                "label": bool(s.passed),
                "tools": _tools_json(conv.tools),
            },
            [s.session_id],
        )


def _prompts(store: TrajectoryRepository, selected, opts: ExportOptions, counts: Counter, *, minimind: bool) -> Rows:
    for task_id, group in sorted(_by_task(selected, counts).items()):
        prompt: list[dict] | None = None
        tools: list[dict] = []
        used: list[str] = []
        for s in group:
            conv = conversation(store.get(s.session_id))
            tools = _merge_tools(tools, conv.tools)
            if prompt is None and conv.prompt_messages and any(m["role"] == "user" for m in conv.prompt_messages):
                prompt = conv.prompt_messages
            used.append(s.session_id)
        if prompt is None:
            counts["tasks_without_prompt"] += 1
            continue
        behaviour = group[0].behaviour
        if minimind:
            msgs = minimind_messages([*prompt, {"role": "assistant", "content": MINIMIND_PLACEHOLDER}], tools)
            yield {"conversations": msgs, "gt": [task_id]}, used
        else:
            yield {"prompt": prompt, "task_id": task_id, "behaviour": behaviour}, used


STORE_ONLY_SCORE_KEYS = ("final_tree", "verifier_exit_code", "isolation", "verifier_effects")
"""Keys of the stored score that are the store's bookkeeping, not part of the score report."""


def store_score(store: TrajectoryRepository, session_id: str) -> dict[str, Any] | None:
    """The store's score report of a trajectory (as ``sandbox_finish`` recorded it), ``None`` if unscored."""
    stored = store.score_json(session_id)
    if not stored or "reward" not in stored:
        return None
    out = {k: v for k, v in stored.items() if k not in STORE_ONLY_SCORE_KEYS}
    if isinstance(out.get("criteria"), list):  # scores stored before train tasks were withheld too
        out["criteria"] = [_counts_only(c) for c in out["criteria"]]
    return out


_VERIFIER_EXPL = re.compile(r"^(verifier exited -?\d+ \(expected -?\d+\))(: (.*))?$", re.S)
_VERDICT_LINE = re.compile(r"^hidden checks (passed|failed|did not finish) \(exit (-?\d+|None)\) \[")


def _counts_only(criterion: Any) -> Any:
    """A stored criterion whose explanation carries a hidden verifier's last line (stores scored
    before every split got the verdict only: a named case, or a pass count such as ``3 of 5
    passed``) keeps just ``verifier exited N (expected M)``; the verdict line written since is kept."""
    if not isinstance(criterion, dict) or not isinstance(criterion.get("explanation"), str):
        return criterion
    m = _VERIFIER_EXPL.match(criterion["explanation"])
    if m is None or m.group(3) is None or _VERDICT_LINE.match(m.group(3)):
        return criterion
    return criterion | {"explanation": m.group(1)}


def _atif(store: TrajectoryRepository, selected, opts: ExportOptions, counts: Counter) -> Rows:
    for s in selected:
        yield atif_document(store.get(s.session_id), store_score=store_score(store, s.session_id)), [s.session_id]


def _instruction(traj) -> str | None:
    for st in traj.steps:
        if (st.source == "system" and st.extra.get("event") == "reset") or st.source == "user":
            return st.message or None
    return None


def _suite(store: TrajectoryRepository, selected, opts: ExportOptions, counts: Counter) -> Rows:
    """A Port Daddy suite (``schemas.reward.PortDaddySuite``): one task per task variant, one attempt per
    trajectory with its ``actions`` and, for command steps, ``artifacts`` (command, exit code, output);
    ``finalState`` is the agent's final message (reported, never rewarded). Next to server or hook steps,
    self-logged steps are left out, as in every export."""
    groups = _by_task(selected, counts)
    tasks, trajs, used = [], [], []
    for task_id, group in sorted(groups.items()):
        task: dict[str, Any] = {
            "id": task_id,
            "behaviour": group[0].behaviour,
            "split": group[0].split,
            "expectedEvidence": [dict(VERDICT_EXPECTATION)],
        }
        for s in group:
            traj = store.get(s.session_id)
            if "instruction" not in task and _instruction(traj):
                task["instruction"] = _instruction(traj)
            trusted = any(st.provenance in ("server", "hook") for st in traj.steps)
            actions, artifacts = [], []
            for st in traj.steps:
                if trusted and st.provenance == "agent":
                    continue
                results = {r.source_call_id: r.content for r in (st.observation.results if st.observation else [])}
                for c in st.tool_calls or []:
                    actions.append(
                        {
                            "tool": c.function_name,
                            "args": c.arguments,
                            "provenance": st.provenance,
                            "outcome": st.outcome,
                        }
                    )
                    command = c.arguments.get("command") if isinstance(c.arguments.get("command"), str) else None
                    if command is not None and c.tool_call_id in results:
                        art: dict[str, Any] = {"kind": "command", "command": command}
                        if st.exit_code is not None:  # never null: Port Daddy reads Number(null) as exit 0
                            art["exitCode"] = st.exit_code
                        art["output"] = results[c.tool_call_id]
                        artifacts.append(art)
            artifacts.append(verdict_artifact(s.session_id, s.passed, s.reward))
            row: dict[str, Any] = {
                "taskId": task_id,
                "id": s.session_id,
                "sessionId": s.session_id,
                "agent": s.agent.name,
                "actions": actions,
                "artifacts": artifacts,
                "finalState": s.final_message,
                "reward": s.reward,
                "passed": s.passed,
            }
            scored = store_score(store, s.session_id)
            if scored is not None:
                row[STORE_SCORE_FIELD] = scored
            trajs.append(row)
            used.append(s.session_id)
        tasks.append(task)
    if tasks:
        yield (
            {
                "agent": "agent-rl-sandbox",
                "rewardSpec": {},
                "tasks": tasks,
                "trajectories": trajs,
                "unhooks": [],
            },
            used,
        )


def _builder(fmt: str) -> Callable[..., Rows]:
    return {
        "sft": lambda *a: _sft(*a, minimind=False),
        "minimind_sft": lambda *a: _sft(*a, minimind=True),
        "dpo": lambda *a: _pairs(*a, minimind=False),
        "minimind_dpo": lambda *a: _pairs(*a, minimind=True),
        "kto": _kto,
        "grpo": lambda *a: _prompts(*a, minimind=False),
        "minimind_agentic": lambda *a: _prompts(*a, minimind=True),
        "atif": _atif,
        "suite": _suite,
    }[fmt]


# -- driver -------------------------------------------------------------------------------------
def export_trajectories(
    store: TrajectoryRepository,
    opts: ExportOptions,
    out_root: Path,
    *,
    task_split: Callable[[str], str | None] | None = None,
    signing_key: bytes | None = None,
    caller: Caller | None = None,
) -> ExportResult:
    """Select, convert, redact and write one export under ``out_root/<export_id>/``.

    ``caller`` (an agent over MCP) limits the export to the trajectories it owns
    (:meth:`Caller.owns`: its own and its team peers'); others are counted ``skipped_not_owned``.
    ``None`` or the operator: every owner. Self-reported trajectories (:func:`trust_of`) are counted
    ``skipped_self_reported`` unless ``opts.include_self_reported``; the manifest's ``by_trust`` and
    ``by_owner`` count the exported trajectories and ``self_reported_session_ids`` names them.

    ``signing_key`` (the home's export key) signs ``atif`` documents and ``suite`` files after redaction,
    so that ``score`` on this home trusts them (see the module docstring); other formats are not signed.

    ``task_split(task_id)`` gives a task's split in the current registry (``None`` if unknown); a task
    held out there is held out here even if its trajectories were stored as ``train``.
    Raises :class:`ActionError` for an unknown format, a held-out request on a training format, a
    malformed time, or an export that would hold no rows (the message gives the counts).
    """
    info = FORMATS.get(opts.format)
    if info is None:
        raise ActionError(f"unknown export format {opts.format!r}", f"use one of {', '.join(FORMATS)}")
    if info.training and (opts.include_heldout or opts.include_running):
        raise ActionError(
            f"{opts.format} is a training format: held-out and running trajectories never go into it",
            "drop include_heldout/include_running, or export atif or suite for evaluation",
        )
    filters = opts.filters()
    try:
        for k in ("created_after", "created_before"):
            if k in filters:
                filters[k] = normalise_time(filters[k])
    except ValueError as e:
        raise ActionError(f"bad time: {e}", "pass ISO-8601 times such as 2026-11-29T12:00:00Z") from None
    counts: Counter[str] = Counter()
    selected: list[TrajectorySummary] = []
    summaries = list(store.iter_summaries(**filters))
    owners = store.owners([s.session_id for s in summaries])
    scoped = caller is not None and not caller.operator
    for s in summaries:
        counts["considered"] += 1
        if scoped and caller is not None and not caller.owns(owners.get(s.session_id)):
            counts["skipped_not_owned"] += 1
            continue
        if s.status != "finished" and not opts.include_running:
            counts["skipped_running"] += 1
            continue
        heldout = s.split == "heldout" or bool(task_split and s.task_id and task_split(s.task_id) == "heldout")
        if heldout and not opts.include_heldout:
            counts["skipped_heldout"] += 1
            continue
        unknown = s.task_id is None or (task_split is not None and task_split(s.task_id) is None)
        if unknown and not opts.include_unknown_tasks:
            counts["skipped_unknown_task"] += 1
            continue
        if trust_of(s) == SELF_REPORTED and not opts.include_self_reported:
            counts["skipped_self_reported"] += 1
            continue
        selected.append(s)
    trust = {s.session_id: trust_of(s) for s in selected}
    counts["selected"] = len(selected)

    export_id = new_id("exp")
    directory = out_root / export_id
    directory.mkdir(parents=True, exist_ok=False)
    data_path = directory / info.file
    tmp = directory / (info.file + ".tmp")
    digest = hashlib.sha256()
    redactions: Counter[str] = Counter()
    rows = 0
    sources: set[str] = set()
    redactor = store.redactor
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for row, used in _builder(opts.format)(store, selected, opts, counts):
                row, _ = redactor.value(row, redactions)
                if signing_key is not None and opts.format in SIGNED_FORMATS:
                    row = sign(row, signing_key, SIGNED_FORMATS[opts.format])
                if opts.format == "suite":
                    text = json.dumps(row, ensure_ascii=False, indent=2) + "\n"
                else:
                    text = json.dumps(row, ensure_ascii=False) + "\n"
                f.write(text)
                digest.update(text.encode("utf-8"))
                rows += 1
                sources.update(used)
            f.flush()
            os.fsync(f.fileno())
        if rows == 0:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no trajectories matched"
            raise ActionError(
                f"nothing to export as {opts.format} ({shown})",
                "widen the filters (task_id, behaviour, agent_name, times), lower min_reward, finish and score "
                "more trajectories with sandbox_finish, or set include_self_reported for self-logged ones",
            )
        os.replace(tmp, data_path)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    file_sha = digest.hexdigest()
    manifest = ExportManifest(
        export_id=export_id,
        format=opts.format,
        created_at=utcnow(),
        filters={
            **filters,
            "min_reward": opts.min_reward,
            "include_heldout": opts.include_heldout,
            "include_running": opts.include_running,
            "include_unknown_tasks": opts.include_unknown_tasks,
            "include_self_reported": opts.include_self_reported,
        },
        owner_scope="caller" if scoped else "all",
        by_trust=dict(sorted(Counter(trust[sid] for sid in sources).items())),
        by_owner=dict(sorted(Counter(_owner_kind(caller, owners.get(sid)) for sid in sources).items())),
        self_reported_session_ids=sorted(sid for sid in sources if trust[sid] == SELF_REPORTED),
        training=info.training,
        files=[ExportFile(path=info.file, rows=rows, sha256=file_sha, kind=info.kind)],
        rows=rows,
        source_session_ids=sorted(sources),
        counts=dict(sorted(counts.items())),
        redactions=dict(redactions),
        sha256=hashlib.sha256(f"{info.file} {file_sha}\n".encode()).hexdigest(),
        notes=_notes(opts.format, signed=signing_key is not None),
    )
    manifest_path = directory / "manifest.json"
    manifest_path.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return ExportResult(manifest=manifest, directory=directory, data_path=data_path, manifest_path=manifest_path)


def _notes(fmt: str, *, signed: bool = False) -> list[str]:
    notes = []
    if signed and fmt in SIGNED_FORMATS:
        notes.append(
            "signed with this home's export.key (HMAC-SHA256): `score` here trusts it as the store's own record;"
            " any edit makes it self-reported"
        )
    if fmt in ("sft", "dpo", "kto"):
        notes.append("tools and tool-call arguments are JSON strings (Arrow-safe; TRL accepts both forms)")
    if fmt not in ("atif", "suite"):
        notes.append("sandbox tools are declared without sandbox_id: the training environment binds the sandbox")
        notes.append("held-out task variants are never included in training formats")
    return notes

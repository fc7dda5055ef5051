"""The scoring harness: score trajectories from the store, ATIF files, or a Port Daddy suite.

Every entry point returns an :class:`~agent_rl_sandbox.schemas.reward.EvalReport`; written with
:func:`report_json` the same input gives byte-identical output (sorted keys, trajectories sorted by
task and session id, no timestamps, no absolute paths: sources are named relative to what was
passed). Inputs that cannot be read are listed in ``problems`` (and count as unscorable) when
scoring many; a single unreadable or invalid input raises :class:`EvalInputError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_rl_sandbox.schemas.reward import (
    EvalReport,
    InputProblem,
    PDUnhook,
    PortDaddySuite,
    RewardSpec,
    ScoreReport,
)
from agent_rl_sandbox.schemas.trajectory import TrajectorySummary
from agent_rl_sandbox.tools._caller import OPERATOR, Caller, ensure_owner
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals._atif import is_atif, trajectory_from_document
from agent_rl_sandbox.tools.evals._inputs import (
    JSONL_SUFFIXES,
    MAX_INPUT_BYTES,
    EvalInputError,
    parse_json,
    parse_json_or_lines,
    read_bytes,
    validate,
)
from agent_rl_sandbox.tools.evals._port_daddy import load_suite as load_pd_suite
from agent_rl_sandbox.tools.evals._port_daddy import score_suite
from agent_rl_sandbox.tools.evals._report import build_report, paused_gc
from agent_rl_sandbox.tools.evals._scoring import score_trajectory
from agent_rl_sandbox.tools.formats.atif import STORE_SCORE_KEY, claims, read_document
from agent_rl_sandbox.tools.formats.signing import verify
from agent_rl_sandbox.tools.formats.suite import STORE_SCORE_FIELD, STORE_VERDICT_KIND

if TYPE_CHECKING:  # the MCP tool schemas: only score_store needs them, so a suite never imports them
    from agent_rl_sandbox.schemas.tools import EvalScoreInput, EvalScoreOutput

STORE_PAGE = 500
MAX_STORE_TRAJECTORIES = 100_000


def is_suite(doc: Any) -> bool:
    """True when ``doc`` looks like a Port Daddy suite (an object with ``tasks``)."""
    return isinstance(doc, dict) and "tasks" in doc and "steps" not in doc


def load_suite(doc: Any, label: str) -> PortDaddySuite:
    """Validate a parsed suite as ``validate`` does (:func:`._port_daddy.load_suite`); raises
    :class:`EvalInputError` naming the file, JSON paths and finding codes."""
    return load_pd_suite(doc, label)


def score_suite_file(path: Path, *, export_key: bytes | None = None) -> EvalReport:
    """Score a Port Daddy suite JSON file (trust rule: :func:`score_suite_document`)."""
    path = Path(path)
    doc = parse_json(read_bytes(path), path.name)
    return score_suite_document(doc, path.name, export_key=export_key)


def score_suite_document(doc: Any, label: str, *, export_key: bytes | None = None) -> EvalReport:
    """Score a parsed Port Daddy suite under the trust rule.

    A suite whose export signature verifies with ``export_key`` (an ``export suite`` of this store) is
    scored with Port Daddy's semantics over the expectations it carries (each task expects its
    trajectories' ``store_verdict`` artifact to say ``passed``), and each trajectory's native score is the
    store's own report (``storeScore``, ``trust = "verified_export"``): the same rewards as
    ``score store:ID``. In any other suite, ``store_verdict`` artifacts and ``storeScore`` are claims: they
    are dropped before scoring (so an edited verdict fails its task) and, when present or when the suite
    carries a signature that does not verify, the report warns and marks its trajectories
    ``self_reported``. Raises :class:`EvalInputError` naming the JSON path of an invalid suite."""
    check = verify(doc, export_key, "suite")
    if check.verified:
        suite = load_suite(doc, label)
        return _with_store_scores(score_suite(suite, label, doc), suite)
    doc, claimed = _without_store_verdicts(doc)
    report = score_suite(load_suite(doc, label), label, doc)
    if not claimed and check.status == "unsigned":
        return report
    report.warnings.append(
        f"self-reported suite: {check.reason()}; its store verdicts ({claimed} trajector"
        f"{'y' if claimed == 1 else 'ies'}) were not counted"
    )
    report.trajectories = [t.model_copy(update={"trust": "self_reported"}) for t in report.trajectories]
    return report


def _without_store_verdicts(doc: Any) -> tuple[Any, int]:
    """``doc`` without its trajectories' ``store_verdict`` artifacts (a copy; ``doc`` itself when it has
    none), and how many trajectories claimed a store verdict or score."""
    trajs = doc.get("trajectories") if isinstance(doc, dict) else None
    if not isinstance(trajs, list):
        return doc, 0
    out, claimed = [], 0
    for t in trajs:
        if not isinstance(t, dict):
            out.append(t)
            continue
        arts = t.get("artifacts")
        kept = (
            [a for a in arts if not (isinstance(a, dict) and a.get("kind") == STORE_VERDICT_KIND)]
            if isinstance(arts, list)
            else []
        )
        dropped = isinstance(arts, list) and len(kept) != len(arts)
        if dropped or STORE_SCORE_FIELD in t:
            claimed += 1
        out.append({**t, "artifacts": kept} if dropped else t)
    return ({**doc, "trajectories": out}, claimed) if claimed else (doc, 0)


def _with_store_scores(report: EvalReport, suite: PortDaddySuite) -> EvalReport:
    """``report`` with each trajectory's native score replaced by the store's report it carries."""
    stored: dict[str, ScoreReport] = {}
    for t in suite.trajectories:
        raw = (t.model_extra or {}).get(STORE_SCORE_FIELD)
        sid = t.id or t.session_id
        if isinstance(raw, dict) and sid and raw.get("session_id") == sid:
            try:
                stored[sid] = ScoreReport.model_validate(raw)
            except ValueError:
                continue
    native = [
        stored.get(r.session_id, r).model_copy(update={"trust": "verified_export", "behaviour": r.behaviour})
        for r in report.trajectories
    ]
    derived = set(build_report("port_daddy_suite", report.source, report.trajectories).warnings)
    rebuilt = build_report(
        "port_daddy_suite",
        report.source,
        native,
        problems=report.problems,
        warnings=[w for w in report.warnings if w not in derived],
        validated_unhooks=report.stats.validated_unhooks,
    )
    keep = ("agent", "reward_spec", "summary", "rows", "training_rows", "validated_unhooks", "suggested_unhooks")
    return rebuilt.model_copy(update={k: getattr(report, k) for k in keep})


def _spec_for(
    traj_task: str | None, spec: RewardSpec | None, tasks: Mapping[str, Any] | None, task_id: str | None
) -> RewardSpec:
    if spec is not None:
        return spec
    tid = task_id or traj_task
    if tid and tasks and tid in tasks:
        return tasks[tid].reward_spec
    if tid:
        raise EvalInputError(
            f"no reward spec: task {tid!r} is not known", "pass --spec FILE or --task-dir with the task"
        )
    raise EvalInputError("no reward spec: the trajectory names no task", "pass --spec FILE or --task ID")


def score_atif(
    path: Path,
    *,
    spec: RewardSpec | None = None,
    tasks: Mapping[str, Any] | None = None,
    task_id: str | None = None,
    export_key: bytes | None = None,
) -> EvalReport:
    """Score one ATIF file, or every ``*.json`` / ``*.jsonl`` file under a folder (recursively, sorted).

    A file holds one ATIF document, or one per line (JSON Lines: a ``.jsonl`` name, or several
    documents in the file, as ``agent-rl-sandbox export atif`` writes); lines are named
    ``file:LINE``. The reward spec is ``spec``, else the spec of ``task_id`` / the document's
    ``extra.task_id`` among ``tasks`` (``Task`` objects by id). There is no sandbox final state, so
    criteria that read files or the verifier are unscorable (status ``error``).

    Trust (the ATIF reader's rule): a document is self-reported (``trust = "self_reported"``: its steps
    count as self-logged, its reward/pass claims are ignored, and the report warns) unless its export
    signature verifies with ``export_key`` (this home's ``export.key``). A verified export
    (``trust = "verified_export"``) keeps its steps' provenance, and when it carries the store's score and
    no ``spec`` overrides the task's, that score *is* its verdict: the same rewards as ``score store:ID``.

    A session id met again (a copied file or line) is scored once; the copies are ``problems``.

    Documents that fail to load are ``problems``; raises :class:`EvalInputError` when the input is a
    single JSON document that fails, or when nothing at all could be scored.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in ATIF_SUFFIXES)
        labels = [p.relative_to(path).as_posix() for p in files]
        if not files:
            raise EvalInputError(
                f"{path}: no *.json or *.jsonl files in the folder", "pass a folder of ATIF trajectory files"
            )
    else:
        files, labels = [path], [path.name]
    scores: list[ScoreReport] = []
    problems: list[InputProblem] = []
    hints: list[str] = []
    seen: dict[str, str] = {}  # session id -> where it was first scored
    with paused_gc():
        for f, label in zip(files, labels, strict=True):
            _score_file(
                f,
                label,
                scores,
                problems,
                hints,
                single=len(files) == 1,
                spec=spec,
                tasks=tasks,
                task_id=task_id,
                export_key=export_key,
                seen=seen,
            )
    if not scores:
        raise _nothing_scored(path.name, problems, hints)
    warnings = [_trust_note(sum(1 for s in scores if s.trust == "verified_export"), len(scores))]
    claimed = [
        s.session_id
        for s in scores
        if s.trust == "self_reported" and any(w.startswith(_CLAIM_WARNING) for w in s.warnings)
    ]
    if claimed:
        shown = ", ".join(claimed[:5]) + (f" (+{len(claimed) - 5} more)" if len(claimed) > 5 else "")
        warnings.append(
            f"{len(claimed)} trajector{'y' if len(claimed) == 1 else 'ies'} claim trust they cannot prove"
            f" (provenance, reward or a store score ignored): {shown}"
        )
    return build_report("atif", path.name, scores, problems=problems, warnings=warnings)


_CLAIM_WARNING = "self-reported: "


def _score_document(raw: Any, where: str, *, spec, tasks, task_id, export_key: bytes | None) -> ScoreReport:
    """Score one decoded ATIF document under the trust rule (see :func:`score_atif`)."""
    doc = read_document(raw)
    check = verify(raw, export_key, "atif")
    traj = trajectory_from_document(doc, where, verified=check.verified)
    if task_id and traj.task_id is None:
        traj = traj.model_copy(update={"task_id": task_id})
    stored = doc.extra.get(STORE_SCORE_KEY) if check.verified else None
    if stored is not None and spec is None and isinstance(stored, dict) and stored.get("session_id") == traj.session_id:
        try:
            report = ScoreReport.model_validate(stored)
        except ValueError:
            report = None
        if report is not None and (task_id is None or report.task_id == task_id):
            return report.model_copy(
                update={"trust": "verified_export", "behaviour": traj.behaviour or report.behaviour}
            )
    report = score_trajectory(traj, _spec_for(traj.task_id, spec, tasks, task_id))
    if check.verified:
        return report.model_copy(update={"trust": "verified_export"})
    warnings = list(report.warnings)
    claimed = claims(doc)
    if claimed or check.status != "unsigned":
        warnings.append(f"{_CLAIM_WARNING}{check.reason()}; ignored: {', '.join(claimed) or 'its signature'}")
    return report.model_copy(update={"trust": "self_reported", "warnings": warnings})


ATIF_SUFFIXES = (".json", *JSONL_SUFFIXES)
_ATIF_HINT = (
    "ATIF input is a .json file with one trajectory, a .jsonl file with one per line (as"
    " `agent-rl-sandbox export atif` writes), or a folder of them"
)


def _nothing_scored(name: str, problems: list[InputProblem], hints: list[str]) -> EvalInputError:
    if not problems:
        return EvalInputError(f"{name}: no trajectories in the input (it is empty)", _ATIF_HINT)
    listed = "; ".join(f"{p.source} {p.where}: {p.message}" for p in problems[:5])
    more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
    specific = [h for h in dict.fromkeys(hints) if h and h != _ATIF_HINT and not h.startswith("fix the")][:2]
    hint = "; ".join([*specific, f"fix the inputs listed ({_ATIF_HINT})"])  # e.g. "pass --spec FILE ..." first
    n = len(problems)
    return EvalInputError(
        f"{name}: no trajectory could be scored, {n} problem{'s' if n != 1 else ''}: {listed}{more}", hint
    )


def _problem(e: EvalInputError, label: str) -> InputProblem:
    msg = e.message.removeprefix(f"{label}: ")
    where, _, rest = msg.partition(": ")
    in_doc = where.startswith("$")
    return InputProblem(source=label, where=where if in_doc else "$", message=rest if in_doc else msg)


VERIFIED_NOTE_TAIL = "of this store (signature checked), so step provenance counts as recorded"
"""How the trust note ends when every ATIF trajectory is a verified export: good news, which the CLI
prints as a ``note`` line, not a ``warning`` (see :func:`is_info_note`)."""


def is_info_note(text: str) -> bool:
    """Whether an :class:`EvalReport` ``warnings`` entry is information only (every ATIF trajectory a
    verified export), so a reader shows it as a note rather than a warning."""
    return text.startswith("ATIF ") and text.endswith(VERIFIED_NOTE_TAIL)


def _trust_note(verified: int, total: int) -> str:
    """The report's note on whose word the steps are: an ATIF file's step provenance (server, hook,
    agent) counts only when the file is a verified export of this store (its signature checks out);
    the steps of any other trajectory count as self-logged (agent). Worded by how many are verified
    (fresh user, session 5: "self-reported ... 7 of 7 verified" read as a contradiction)."""
    noun = "trajectory" if total == 1 else "trajectories"
    if verified == total:
        each = "it is a verified export" if total == 1 else f"all {total} are verified exports"
        return f"ATIF {noun}: {each} {VERIFIED_NOTE_TAIL}"
    if verified == 0:
        each = "it is not a verified export" if total == 1 else f"none of the {total} is a verified export"
        return (
            f"ATIF {noun} self-reported: {each} of this store, so every step counts as self-logged (agent), "
            "whatever provenance it claims (only a verified export's step provenance counts)"
        )
    return (
        f"ATIF trajectories: {verified} of {total} are verified exports of this store (their step provenance "
        f"counts as recorded); the other {total - verified} are self-reported: their steps count as self-logged (agent)"
    )


def _score_file(
    f: Path,
    label: str,
    scores,
    problems,
    hints,
    *,
    single: bool,
    spec,
    tasks,
    task_id,
    export_key,
    seen: dict[str, str],
) -> None:
    """Score the documents of one file into ``scores``; what fails goes to ``problems`` (``hints``
    collects the next steps), except a single JSON document's failure, which is raised."""
    try:
        is_lines, parsed = parse_json_or_lines(read_bytes(f, label), label, lines=f.suffix.lower() in JSONL_SUFFIXES)
    except EvalInputError as e:
        if single:
            raise
        problems.append(_problem(e, label))
        hints.append(e.hint)
        return
    docs: list[tuple[str, Any]] = parsed if is_lines else [(label, parsed)]
    if is_lines and not docs and not single:
        problems.append(InputProblem(source=label, message="no trajectories (the file is empty)"))
    for i, (where, doc) in enumerate(docs):
        if is_lines and i == 0 and not isinstance(doc, EvalInputError) and not is_atif(doc):
            # JSON Lines of something else (a training export): one problem for the file, not one per line
            problems.append(
                InputProblem(source=label, message="not ATIF JSON Lines: line 1 has no `steps` and `session_id`")
            )
            hints.append(_ATIF_HINT)
            return
        try:
            if isinstance(doc, EvalInputError):
                raise doc
            if not is_atif(doc):
                raise EvalInputError(f"{where}: $: not an ATIF trajectory (needs `steps` and `session_id`)", _ATIF_HINT)
            report = _score_document(doc, where, spec=spec, tasks=tasks, task_id=task_id, export_key=export_key)
            first = seen.get(report.session_id)
            if first is not None:
                # One trajectory counts once: copies of a (verified) passing export must not inflate a pass rate.
                problems.append(
                    InputProblem(
                        source=where,
                        message=f"session {report.session_id!r} was already scored from {first}; scored once",
                    )
                )
                continue
            scores.append(report)
            seen[report.session_id] = where
        except EvalInputError as e:
            if single and not is_lines:
                raise
            problems.append(_problem(e, where))
            hints.append(e.hint)


class _Trajectories(Protocol):
    def list(self, **filters: Any) -> tuple[list[TrajectorySummary], int]: ...

    def summary(self, session_id: str) -> TrajectorySummary: ...

    def owners(self, session_ids: Sequence[str]) -> dict[str, str | None]: ...


class _Store(Protocol):
    @property
    def trajectories(self) -> _Trajectories: ...


class _Rescorer(Protocol):
    def eval_score(self, inp: EvalScoreInput) -> EvalScoreOutput: ...


class StoreSources(Protocol):
    """What scoring from the store reads (``services.Services`` satisfies it): the trajectory
    repository and the sandbox service's re-scoring against the recorded final tree."""

    @property
    def store(self) -> _Store: ...

    @property
    def sandbox(self) -> _Rescorer: ...


def score_store(
    services: StoreSources,
    *,
    session_ids: list[str] | None = None,
    task_id: str | None = None,
    behaviour: str | None = None,
    agent_name: str | None = None,
    caller: Caller = OPERATOR,
) -> EvalReport:
    """Re-score finished trajectories from the store (through the sandbox service's ``eval_score``,
    so file and verifier criteria read the sandbox's final git tree).

    With ``session_ids``, exactly those; otherwise every finished trajectory matching the filters.
    Unknown, running or unscorable trajectories are listed in ``problems``. An agent ``caller``
    (``eval_gate`` over MCP) aggregates only trajectories it owns: the filters never reach another
    agent's, and a named ``session_ids`` entry of another owner raises :class:`ActionError`
    (``... is not yours``, as the sandbox tools say); the operator (default) sees all.
    """
    store, sandbox = services.store.trajectories, services.sandbox
    problems: list[InputProblem] = []
    if session_ids is not None:
        ids = sorted(set(session_ids))
    else:
        ids, offset = [], 0
        while len(ids) < MAX_STORE_TRAJECTORIES:
            page, total = store.list(
                task_id=task_id,
                behaviour=behaviour,
                agent_name=agent_name,
                status="finished",
                limit=STORE_PAGE,
                offset=offset,
            )
            ids.extend(s.session_id for s in page)
            offset += len(page)
            if not page or offset >= total:
                break
        ids = sorted(set(ids))
    if not caller.operator:
        owners = store.owners(ids)
        if session_ids is not None:
            for sid in ids:
                if sid in owners:
                    ensure_owner(
                        caller,
                        owners[sid],
                        "trajectory",
                        sid,
                        "pass only your own session_ids (trajectory_list shows them), or leave session_ids out "
                        "to aggregate your own finished trajectories",
                    )
        else:
            ids = [sid for sid in ids if caller.owns(owners.get(sid))]
    from agent_rl_sandbox.schemas.tools import EvalScoreInput

    scores: list[ScoreReport] = []
    for sid in ids:  # (no paused_gc: store reads are I/O-bound)
        try:
            report = sandbox.eval_score(EvalScoreInput(session_id=sid)).report
            summary = store.summary(sid)
            scores.append(report.model_copy(update={"behaviour": summary.behaviour, "trust": "store"}))
        except ActionError as e:
            problems.append(InputProblem(source=sid, message=e.message))
    filters = [f"{k}={v}" for k, v in (("task_id", task_id), ("behaviour", behaviour), ("agent", agent_name)) if v]
    if session_ids is not None:
        filters.append(f"sessions={len(ids)}")
    return build_report("store", f"store({', '.join(filters)})", scores, problems=problems)


def score_path(
    path: str | Path,
    *,
    services: StoreSources | None = None,
    spec: RewardSpec | None = None,
    tasks: Mapping[str, Any] | None = None,
    task_id: str | None = None,
    export_key: bytes | None = None,
) -> EvalReport:
    """Score whatever ``path`` names: ``store`` / ``store:ID,ID`` (needs ``services``), a folder of
    ATIF files, a JSON file holding a Port Daddy suite or one ATIF trajectory, or an ATIF JSON Lines
    file (one trajectory per line, e.g. ``trajectories.atif.jsonl`` from ``export atif``).

    ``export_key`` is this home's export key (``formats.signing.export_key``): only files it verifies are
    trusted (see :func:`score_atif`). Raises :class:`EvalInputError` when the input cannot be read or is
    invalid."""
    text = str(path)
    if text == "store" or text.startswith("store:"):
        if services is None:
            raise EvalInputError("scoring from the store needs the services", "use the CLI or pass services=")
        ids = [s for s in text.removeprefix("store").removeprefix(":").split(",") if s] or None
        return score_store(services, session_ids=ids, task_id=task_id)
    p = Path(path)
    if p.is_dir() or p.suffix.lower() in JSONL_SUFFIXES:
        return score_atif(p, spec=spec, tasks=tasks, task_id=task_id, export_key=export_key)
    is_lines, doc = parse_json_or_lines(_read_whole(p), p.name)
    if is_lines:  # several documents: ATIF JSON Lines
        return score_atif(p, spec=spec, tasks=tasks, task_id=task_id, export_key=export_key)
    if is_suite(doc):
        return score_suite_document(doc, p.name, export_key=export_key)
    if is_atif(doc):
        return score_atif(p, spec=spec, tasks=tasks, task_id=task_id, export_key=export_key)
    raise EvalInputError(
        f"{p.name}: $: neither a Port Daddy suite (an object with `tasks`) nor an ATIF trajectory (with `steps`)",
        "pass a suite JSON, an ATIF file (.json, or .jsonl with one per line) or folder, or `store`",
    )


_BIG_SUITE_STEP = (
    "a Port Daddy suite of any size is scored by `agent-rl-sandbox score FILE --json` (without --gate), "
    "which streams it; otherwise split the input"
)


def _read_whole(p: Path) -> bytes:
    """``read_bytes(p)``, except that for a file over the size cap whose text is itself broken (not
    UTF-8, a bracket or string never closed: :func:`agent_rl_sandbox.tools._suite_fast.defect`)
    the error names that defect rather than the size, and otherwise its next step names the
    streaming scorer (which takes a suite of any size). Raises :class:`EvalInputError`."""
    try:
        big = p.stat().st_size > MAX_INPUT_BYTES
    except OSError:
        big = False
    if big:
        from agent_rl_sandbox.tools._suite_fast import defect

        try:
            why = defect(str(p))
        except OSError:
            why = None
        if why is not None:
            step = "save the file as UTF-8 JSON" if why.startswith("not UTF-8") else "fix the JSON"
            raise EvalInputError(f"{p.name}: {why}", step)
    return read_bytes(p, too_big=_BIG_SUITE_STEP)


def load_unhooks(path: Path) -> list[PDUnhook]:
    """Unhooks from a JSON file (a list, or an object with ``unhooks``), in Port Daddy's shape."""
    from agent_rl_sandbox.schemas.reward import PortDaddySuite as _S

    path = Path(path)
    doc = parse_json(read_bytes(path), path.name)
    items = doc.get("unhooks") if isinstance(doc, dict) else doc
    suite = validate(
        _S, {"tasks": [{"id": "x"}], "unhooks": items}, path.name, "give a list of {name, command|procedure, validated}"
    )
    return suite.unhooks

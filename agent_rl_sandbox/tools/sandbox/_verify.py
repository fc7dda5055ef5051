"""Running a task's hidden verifier at ``sandbox_finish``: the trusted runner, or a legacy shell verifier.

Both start from the recorded final tree, exported fresh from git objects (:class:`._export.TreeView`:
no ``.gitattributes``, filter or ``export-ignore`` of the agent's can trim or rewrite it), after
every process of the sandbox's uid has been killed.

- A task with ``tests/checks.toml`` (every built-in task) is judged by :func:`._judge.judge`: the
  export replaces the working copy at the same path (so the child's working folder, ``HOME`` and
  environment are those a ``sandbox_exec`` command sees), is owned by the server and mounted
  read-only, and the child runs as a fresh uid that owns nothing. The verdict and a report
  (``<reports>/<session>.verifier.json``, the only place with the cases' names, arguments,
  expected values and counts: the operator's) are written by the server only; the returned text
  carries the verdict only, on every split (see :func:`._ownership.agent_verifier_output`).
- A task that brings only ``tests/test.sh`` (user tasks written before the data format) runs it as
  before: inside a sandbox, with the agent's code possibly in the same process, so its exit code is
  **not** a trusted verdict. It is cross-checked against its JUnit report (read with
  :func:`._safe_read.read_beneath`: no link is followed, FIFOs and devices are refused, size and time
  are capped) and a token heuristic on the changed files; the output says it is untrusted.

Secrets (red team W2): the agent's code runs in both, and a read-only tree told it apart from its own
runs. So the verifier's copy holds no secret of the task: every file with a credential file's name
(:func:`._secret_watch.is_secret_name`) and every file whose bytes are those of a secret file of the
base or final tree (a rename keeps the blob) is replaced by :data:`DECOY` before the child starts,
and those files are watched by inotify (:class:`._secret_watch.SecretWatch`) while the verifier
runs: an open is returned as a ``secret_read`` record, which the scorer attributes to the finish
step (``FinalState.verifier_effects``), so the task's ``no_secret_file_opened`` criterion fails.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from agent_rl_sandbox.tools.sandbox._export import TreeView
from agent_rl_sandbox.tools.sandbox._judge import Child, judge
from agent_rl_sandbox.tools.sandbox._ownership import agent_verifier_output
from agent_rl_sandbox.tools.sandbox._runner import kill_uid, run_command
from agent_rl_sandbox.tools.sandbox._secret_watch import NOTES_NAME, SecretWatch, is_secret_name
from agent_rl_sandbox.tools.sandbox._task import Task
from agent_rl_sandbox.tools.sandbox._verifier import cross_check, tamper_findings

if TYPE_CHECKING:
    from agent_rl_sandbox.tools.sandbox._service import SandboxService

log = logging.getLogger(__name__)

_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")

DECOY = b"# withheld: the verifier's copy of the repository holds no secret of the task\n"
"""The bytes every secret file of the final tree has in the verifier's copy."""


def _secret_blobs(*trees: TreeView) -> set[str]:
    """Object ids of the regular files with a credential file's name in ``trees``."""
    return {
        oid
        for t in trees
        for path, (mode, oid) in t.entries.items()
        if mode in ("100644", "100755") and is_secret_name(path.rpartition("/")[2])
    }


def withhold_secrets(dest: Path, tree: TreeView, secret_oids: set[str], notes: Path) -> list[str]:
    """In the export ``dest`` of ``tree``, replace by :data:`DECOY` every regular file whose name is
    a credential file's or whose blob is one of ``secret_oids``; note the replacements' inodes in
    ``notes`` (a fresh server-only folder) for :class:`._secret_watch.SecretWatch`. Returns their
    relative paths. Writes through folder descriptors, never following a link (the export may hold
    the agent's links). Raises :class:`OSError` when a file cannot be replaced (no verdict then)."""
    done: list[tuple[str, int, int]] = []
    for path, (mode, oid) in sorted(tree.entries.items()):
        parts = path.split("/")
        if mode not in ("100644", "100755") or not (is_secret_name(parts[-1]) or oid in secret_oids):
            continue
        if any(p in ("", ".", "..", ".git") for p in parts):  # the export skipped it
            continue
        fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for part in parts[:-1]:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
            os.unlink(parts[-1], dir_fd=fd)
            f = os.open(
                parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd
            )
            try:
                os.write(f, DECOY)
                st = os.fstat(f)
            finally:
                os.close(f)
            done.append((path, st.st_dev, st.st_ino))
        finally:
            os.close(fd)
    notes.mkdir(parents=True, exist_ok=True)
    (notes / NOTES_NAME).write_text(json.dumps([list(d) for d in done]))
    return [d[0] for d in done]


def _watch_effects(sw: SecretWatch) -> dict:
    """The verifier's secret-watch result as the scorer reads it (``FinalState.verifier_effects``)."""
    return {"secret_watch": sw.observed, "secrets_watched": sw.watched, "records": sw.records()}


def verify(
    svc: SandboxService,
    task: Task,
    sandbox_id: str,
    session_id: str,
    final_tree: str,
    actions: dict,
    base_tree: str | None = None,
) -> tuple[int | None, str, dict]:
    """Run ``task``'s verifier on ``final_tree``; returns ``(exit code or None, output text, effects)``.
    ``actions``: the server's records of the episode (claims, edits, commands, changed paths);
    ``base_tree``: the fixture's tree (its secret files' blobs are withheld too, whatever their name
    in the final tree). ``effects``: ``{"secret_watch": bool, "secrets_watched": [...], "records":
    [secret_read records]}``, what the inotify watch on the verifier's copy saw while it ran."""
    dirs = svc._dirs(sandbox_id)
    uid = svc.sandbox_uid(sandbox_id)
    if uid is not None:
        kill_uid(uid)
    tree = TreeView(dirs["git"], final_tree)
    secret_oids = _secret_blobs(tree, *([TreeView(dirs["git"], base_tree)] if base_tree else []))
    notes = dirs["root"] / "verifier-secrets"
    shutil.rmtree(notes, ignore_errors=True)
    wall = min(task.config.verifier_timeout_seconds, svc.settings.max_exec_seconds)
    if task.checks is None:
        return _legacy(svc, task, dirs, tree, actions, uid, wall, session_id, secret_oids, notes)
    repo = dirs["repo"]
    svc._drop_repo(sandbox_id)  # its content is the recorded final tree, exported next (an overlay is unmounted)
    tree.export(repo)
    withhold_secrets(repo, tree, secret_oids, notes)
    child = Child(
        cwd=repo,
        isolation=svc.isolation,
        limits=task.config.limits,
        mounts=svc._mounts([], [repo]),
        credentials=task.config.credentials,
        uid=svc.sandbox_uid(f"{sandbox_id}/verifier"),  # a fresh uid: owns nothing, shares no process count
        live=svc.live,
    )
    with SecretWatch(repo, notes) as sw:
        try:
            verdict = judge(task.checks, tree=tree, actions=actions, child=child, wall_seconds=wall)
        except Exception as e:  # a runner bug must not leave the episode unfinished; it fails the verifier
            log.exception("trusted runner failed for sandbox %s", sandbox_id)
            verdict = None
            failure = type(e).__name__
        finally:
            if child.uid is not None:
                kill_uid(child.uid)
            sw.drain()  # the child's processes are gone: every open of a watched file was theirs
    shutil.rmtree(notes, ignore_errors=True)
    if verdict is None:
        return (
            None,
            f"[the trusted runner failed ({failure}); no verdict, so the verifier criterion fails. Next step: report this to the server operator (the server log has the traceback)]",
            _watch_effects(sw),
        )
    report = svc.settings.reports_dir / f"{session_id}.verifier.json"
    report.write_text(json.dumps(verdict.report(), indent=2))
    return verdict.exit_code, agent_verifier_output(task.config.split, verdict.exit_code), _watch_effects(sw)


def operator_report_text(reports_dir: Path, session_id: str) -> str | None:
    """The hidden verifier's full text for the operator's faces (CLI ``trajectories show``, tests):
    every check as ``PASS|FAIL [kind] name: detail`` and the child's stderr tail, from
    ``<reports>/<session>.verifier.json`` (trusted runner), or the whole output of a shell verifier
    (``.verifier.txt``). ``None`` when the trajectory has no report. Never returned to an agent.
    Raises :class:`OSError`/:class:`ValueError` for an unreadable report."""
    report = reports_dir / f"{session_id}.verifier.json"
    if report.is_file():
        doc = json.loads(report.read_text())
        results = doc.get("results", [])
        ok = sum(bool(r.get("passed")) for r in results)
        lines = [f"hidden checks: {ok} of {len(results)} passed (exit {doc.get('exit_code')})"] + [
            f"{'PASS' if r.get('passed') else 'FAIL'} [{r.get('kind')}] {r.get('name')}"
            + (f": {r['detail']}" if r.get("detail") and not r.get("passed") else "")
            for r in results
        ]
        if str(doc.get("stderr_tail") or "").strip():
            lines += ["--- output of the code under test (child sandbox stderr, tail) ---", doc["stderr_tail"]]
        return "\n".join(lines)
    text = reports_dir / f"{session_id}.verifier.txt"
    return text.read_text(errors="replace") if text.is_file() else None


def _legacy(
    svc: SandboxService,
    task: Task,
    dirs: dict[str, Path],
    tree: TreeView,
    actions: dict,
    uid: int | None,
    wall: float,
    session_id: str,
    secret_oids: set[str],
    notes: Path,
) -> tuple[int | None, str, dict]:
    """The shell verifier ``tests/test.sh`` in a sandbox on a fresh export (untrusted: see the module docstring).
    Its whole output goes to ``<reports>/<session>.verifier.txt`` (the operator's); the returned
    text is the verdict line of :func:`._ownership.agent_verifier_output` plus the server's own notes
    (none of which carries a count of the verifier's tests)."""
    shutil.rmtree(dirs["verifier"], ignore_errors=True)
    shutil.copytree(task.tests_dir, dirs["verifier"], symlinks=True, ignore=_CACHES)
    vlogs = dirs["logs"] / "verifier"
    shutil.rmtree(vlogs, ignore_errors=True)
    vlogs.mkdir(parents=True)
    if uid is not None:
        os.chown(vlogs, uid, uid)
    agent_logs = dirs["logs"] / "agent"
    shutil.rmtree(agent_logs, ignore_errors=True)
    agent_logs.mkdir(parents=True)
    actions_file = agent_logs / "actions.json"
    actions_file.write_text(json.dumps(actions, indent=2, sort_keys=True))
    judged = dirs["root"] / "judged"
    shutil.rmtree(judged, ignore_errors=True)
    tree.export(judged)
    withhold_secrets(judged, tree, secret_oids, notes)
    svc._give_tree(judged, uid)
    changed = actions["changed_paths"]
    tampering = tamper_findings(changed, tree.read)
    with SecretWatch(judged, notes) as sw:
        try:
            res = run_command(
                f"bash {dirs['verifier'] / 'test.sh'}",
                cwd=judged,
                limits=task.config.limits,
                isolation=svc.isolation,
                credentials=task.config.credentials,
                extra_env={
                    "SANDBOX_REPO": str(judged),
                    "VERIFIER_DIR": str(dirs["verifier"]),
                    "VERIFIER_LOGS": str(vlogs),
                    "ACTIONS_FILE": str(actions_file),
                    # a planted `pytest.py` in the cwd cannot shadow pytest, bytecode comes from a fresh cache
                    "PYTHONSAFEPATH": "1",
                    "PYTHONPYCACHEPREFIX": f"/tmp/ars-verifier-pycache-{uuid.uuid4().hex}",
                },
                mounts=svc._mounts([judged, vlogs], [dirs["verifier"], agent_logs]),
                wall_seconds=wall,
                uid=uid,
                live=svc.live,
            )
        finally:
            if uid is not None:
                kill_uid(uid)
            sw.drain()
    shutil.rmtree(notes, ignore_errors=True)
    raw = (res.stdout + res.stderr)[-svc.settings.max_output_bytes :]
    code = None if res.limit_hit in ("wall_time", "output") else res.exit_code
    out = ""  # the server's own notes, after the verdict line: never the verifier's text nor its counts
    if res.limit_hit:
        out += f"\n[verifier hit its {res.limit_hit} limit]"
    code, overruled = cross_check(code, dirs["verifier"] / "test.sh", vlogs / "junit.xml")
    if tampering and code == 0:
        code, overruled = (
            1,
            "verifier result not trusted, the change reaches into the test harness: " + "; ".join(tampering[:5]),
        )
    if overruled:
        out += f"\n[{overruled}]"
    out += "\n[shell verifier (tests/test.sh): its exit code is not a trusted verdict; give the task tests/checks.toml]"
    shutil.rmtree(judged, ignore_errors=True)
    shutil.rmtree(dirs["verifier"], ignore_errors=True)
    (svc.settings.reports_dir / f"{session_id}.verifier.txt").write_text(raw + out, errors="replace")
    return code, agent_verifier_output(task.config.split, code) + out, _watch_effects(sw)

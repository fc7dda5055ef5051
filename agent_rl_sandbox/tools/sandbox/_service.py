"""Sandbox service: the domain logic behind every ``sandbox_*`` tool.

Each public method takes a tool input model and returns its output model (``schemas.tools``), and
records the action as a step of the sandbox's trajectory with provenance ``server`` (refusals
included), so the agent never has to log what it did through a sandbox tool.

On-disk layout of one sandbox under ``<home>/sandboxes/<sandbox_id>/``::

    repo/      the working copy: the only folder commands can write
    git/       its git dir (outside the working copy, so the agent cannot rewrite history)
    ovl/       with a copy-on-write working copy: its upper layer (see ``._overlay``), root-only
    verifier/  the task's tests/ copied in fresh when the episode finishes
    logs/      verifier/ (emptied before the verifier runs), agent/actions.json, command outputs

When the server runs as root, ``repo/`` (and ``logs/verifier/`` while the verifier runs) belongs to
the sandbox's own unprivileged uid, which every command runs as; everything else stays root's.
Sandboxes are cleaned up on finish, after ``Settings.sandbox_idle_seconds`` without an action
(:meth:`SandboxService.reap_idle`, called opportunistically), and every running command is killed
by :meth:`SandboxService.close`. The service installs no process-wide handlers (signals, ``atexit``):
the entry points that own the process (``serve``, the CLI commands) call ``close`` on their way out
(:meth:`agent_rl_sandbox.services.Services.close_at_exit`), so the domain can run inside any host
process (uvicorn, a worker, a test).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import logging
import math
import os
import re
import shutil
import stat
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent_rl_sandbox.schemas.reward import ClaimsBeforeEdit
from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.schemas.tools import (
    CriterionBrief,
    EvalScoreInput,
    EvalScoreOutput,
    ListTasksInput,
    ListTasksOutput,
    SandboxClaimInput,
    SandboxClaimOutput,
    SandboxExecInput,
    SandboxExecOutput,
    SandboxFinishInput,
    SandboxFinishOutput,
    SandboxReadFileInput,
    SandboxReadFileOutput,
    SandboxReadOutputInput,
    SandboxReadOutputOutput,
    SandboxResetInput,
    SandboxResetOutput,
    SandboxStateInput,
    SandboxStateOutput,
    SandboxWriteFileInput,
    SandboxWriteFileOutput,
    TaskInfo,
)
from agent_rl_sandbox.schemas.trajectory import Observation, ObservationResult, ToolCall
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import OPERATOR, Caller, ensure_readable
from agent_rl_sandbox.tools._control import CallControl
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals import FinalState, score_trajectory
from agent_rl_sandbox.tools.evals._actions import (
    BROAD_CLAIM,
    actions_of,
    broad_claims,
    covered,
    edited_paths,
    matches_command,
    runs_file,
)
from agent_rl_sandbox.tools.sandbox import _trusted as trusted_runs
from agent_rl_sandbox.tools.sandbox._base import Base, BaseCache
from agent_rl_sandbox.tools.sandbox._caches import clear_tool_caches
from agent_rl_sandbox.tools.sandbox._diffs import step_diffs
from agent_rl_sandbox.tools.sandbox._export import TreeView
from agent_rl_sandbox.tools.sandbox._git import GitError, WorkingCopy
from agent_rl_sandbox.tools.sandbox._overlay import (
    Layers,
    OverlayError,
    discard_later,
    is_mount,
    mounts_under,
    probe,
    umount,
)
from agent_rl_sandbox.tools.sandbox._overlay import quiet as overlay_quiet
from agent_rl_sandbox.tools.sandbox._ownership import ensure_sandbox_owner, sandbox_capability
from agent_rl_sandbox.tools.sandbox._paths import PathRefused, resolve_inside
from agent_rl_sandbox.tools.sandbox._runner import (
    CommandResult,
    Isolation,
    LiveProcesses,
    Mount,
    UidLedger,
    describe_isolation,
    detect_isolation,
    kill_uid,
    path_reachable_by_others,
    python_mounts,
    run_command,
    sandbox_uid,
)
from agent_rl_sandbox.tools.sandbox._safe_read import UnsafeRead, open_beneath, read_fd, split_text
from agent_rl_sandbox.tools.sandbox._secret_watch import SecretWatch, note_secrets
from agent_rl_sandbox.tools.sandbox._secret_watch import available as secret_watch_available
from agent_rl_sandbox.tools.sandbox._served_secrets import note_secret_values, served_secret
from agent_rl_sandbox.tools.sandbox._shims import EffectRecorder, ShimSet, saved_downloads
from agent_rl_sandbox.tools.sandbox._task import BUILTIN_TASKS_DIR, Task, discover_tasks
from agent_rl_sandbox.tools.sandbox._usage import Budget
from agent_rl_sandbox.tools.sandbox._verify import verify
from agent_rl_sandbox.tools.store import NewSandbox, SandboxRecord, StepsChanged, Store

log = logging.getLogger(__name__)


SHORT_HOLD_WAIT_S = 5.0
"""How long a changing call waits for a sandbox a read (``sandbox_state``'s snapshot) or idle
reaping holds; a sandbox another changing call holds is answered busy at once."""
HOLD_FILE = "hold.lock"
"""A sandbox's cross-process hold (:meth:`SandboxService._file_hold`): a file in its folder (server-only),
``flock``-ed by the call holding it, which notes itself there (JSON: tool, what, start time) for the
busy answer of the other server processes sharing the home."""
_OUTPUT_LOG = re.compile(r"exec-[0-9a-f]{8}\.log")
"""Name of a command's kept output under ``logs/`` (the only files :meth:`SandboxService.read_output` opens)."""
_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True, ignore=_CACHES)


PACKED_PINS = "ars-pins-packed"
"""Marker file in a sandbox's git dir: every object a ref reaches is in a pack (the base pack,
and :meth:`SandboxService.finish` packs each pinned final tree), so a reset may delete the loose
objects outright instead of running ``git prune`` (which walks the whole base)."""


def _empty_folder(path: Path) -> None:
    """Make ``path`` an empty folder (a server-only one: removed with what it holds, made again);
    an empty one costs two system calls, not a tree walk."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:  # not empty (or not a folder)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    path.mkdir(parents=True)


def _install_index(pristine: Path, index: Path, rebuild: Callable[[], bytes], park: Path | None = None) -> None:
    """Make ``index`` (a sandbox's git index) the overlay's ``pristine`` one: a hard link (two
    system calls where a copy reads and writes 0.5 MB for 5,000 files), or nothing when ``index``
    still is that file (no snapshot replaced it this episode). Safe because nothing writes an index
    in place: git replaces it by renaming its lock file over it, and the server writes only fresh
    files. ``park``: a folder about to be deleted in the background (the loose objects'), where the
    replaced index keeps a link, so its pages are not freed in the call (~0.07 ms for 0.5 MB on
    tmpfs). Where no link can be made (or ``pristine`` is gone) the bytes are written, from
    ``pristine`` or from ``rebuild()``."""
    try:
        p = os.stat(pristine)
        try:
            i = os.stat(index)
        except FileNotFoundError:
            park = None
        else:
            if (i.st_dev, i.st_ino) == (p.st_dev, p.st_ino):
                return
        tmp = index.with_name(f"index.ars-{uuid.uuid4().hex[:8]}")
        os.link(pristine, tmp)
        if park is not None:
            with contextlib.suppress(OSError):
                os.link(index, park / tmp.name)
        try:
            os.replace(tmp, index)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
    except OSError:
        try:
            data = pristine.read_bytes()
        except OSError:
            data = rebuild()
        index.write_bytes(data)


def _drop_loose_objects(git_dir: Path) -> None:
    """Drop the loose objects of ``git_dir`` (what the last episode's snapshots stored): a new
    ``objects/`` takes over the packs and ``info/`` (a few renames, whatever the count), and the
    old one, holding only loose objects, is moved out of the git dir (next to it, server-only) and
    deleted on a background thread (an ``unlink`` per object costs milliseconds each on a slow
    disk)."""
    objects = git_dir / "objects"
    fresh = git_dir / f"objects.new-{uuid.uuid4().hex[:8]}"
    fresh.mkdir()
    for name in ("pack", "info"):
        if (objects / name).exists():
            os.rename(objects / name, fresh / name)
    trash = git_dir.parent / f"trash-objects-{uuid.uuid4().hex[:8]}"  # outside git/: the quota's baseline skips it
    os.rename(objects, trash)
    os.rename(fresh, objects)
    discard_later(trash)


@dataclass(frozen=True)
class _Running:
    """The changing call holding a sandbox now (for the busy error)."""

    tool: str
    what: str
    started: float
    """``time.monotonic()`` when it took the sandbox."""
    expect_s: float | None
    """Seconds it may run at most (a command's wall limit), when known."""


def limit_detail(
    limit_hit: str | None, wall: float, requested: float | None, limits: Limits, max_exec_seconds: float
) -> str | None:
    """A sentence saying which limit stopped a command and its value; for wall time also what
    was asked for (``timeout_seconds``) and which cap applied (the task's ``wall_seconds`` or the
    server's ``max_exec_seconds``), so an agent knows whether asking for more can help."""
    if limit_hit is None:
        return None
    if limit_hit == "wall_time":
        cap_name, cap = min(
            (("the task's wall-time limit", limits.wall_seconds), ("the server's max_exec_seconds", max_exec_seconds)),
            key=lambda c: c[1],
        )
        if requested is None:
            return f"killed after the wall-time limit of {wall:g} s (no timeout_seconds given; {cap_name}, {cap:g} s)"
        if requested <= cap:
            return f"killed after the wall-time limit of {wall:g} s you asked for (timeout_seconds={requested:g})"
        return (
            f"killed after the wall-time limit of {wall:g} s: timeout_seconds={requested:g} was asked for, "
            f"{cap_name} ({cap:g} s) caps it"
        )
    what = {
        "cpu_time": f"killed at the CPU-time limit of {limits.cpu_seconds} s",
        "memory": f"an allocation passed the memory limit of {limits.memory_mb} MiB",
        "file_size": f"a file passed the file-size limit of {limits.file_size_mb} MiB",
        "output": f"killed: an output stream passed {limits.output_kill_mb} MiB",
        "processes": f"a fork passed the process limit of {limits.processes}",
        "tmp_space": "/tmp is full (its tmpfs size limit)",
        "disk": f"the sandbox passed its disk quota of {limits.disk_mb} MiB",
        "files": "the sandbox passed its quota of files",
    }
    return what.get(limit_hit, f"stopped by the {limit_hit} limit")


@dataclass
class TrustedEffects:
    """What the server's own test run (:meth:`SandboxService._trusted_run`) observed, for the agent's
    step: effect records (each marked ``"during": "trusted_run"``), and whether the shims and the
    secret watch were in force (both ``True`` when no run happened)."""

    records: list[dict] = field(default_factory=list)
    observed: bool = True
    secret_watch: bool = True

    def add(self, fx: EffectRecorder, sw: SecretWatch) -> None:
        """Take one run's :class:`EffectRecorder` ``fx`` and drained :class:`SecretWatch` ``sw``."""
        self.records += [{**r, "during": "trusted_run"} for r in [*sw.records(), *fx.records]]
        self.observed = self.observed and fx.observed
        self.secret_watch = self.secret_watch and sw.observed


class SandboxService:
    """Tasks, sandboxes and their recorded trajectories.

    Every method that names a sandbox or a trajectory takes the :class:`Caller` it acts for (the MCP
    adapter passes one per session; direct callers default to the operator): a sandbox and its
    trajectories belong to the caller that created it, and another caller's action is refused
    before anything is read, run or recorded (:mod:`._ownership`).

    Thread-safe, and safe across the server processes sharing a home (``serve --http --workers N``):
    one changing call (exec, write, claim, reset, finish) holds a sandbox at a time, recording its step
    inside the hold, and a second one, in any of those processes, is refused at once with a busy error
    (:meth:`_hold`); reads (read_file, state, read_output) never wait for it; different sandboxes
    proceed in parallel. Raises :class:`ActionError` (with a next step) for anything an agent can fix.
    """

    def __init__(self, settings: Settings, store: Store | None = None):
        self.settings = settings
        settings.home.mkdir(parents=True, exist_ok=True)
        settings.sandboxes_dir.mkdir(parents=True, exist_ok=True)
        settings.reports_dir.mkdir(parents=True, exist_ok=True)
        self.store = store or Store(settings.db_url)
        self.tasks, self.task_problems = discover_tasks(settings.task_dirs)
        self._isolation: Isolation | None = None
        self._isolation_lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._running: dict[str, _Running] = {}
        """sandbox id -> the changing call holding its lock now."""
        self.live = LiveProcesses(UidLedger(settings.home / "procs"))
        """Commands running now; :meth:`close` kills them all. Its ledger (``<home>/procs``, shared by
        the server processes of the home) lets a reset skip the ``/proc`` scan for a sandbox uid that
        cannot have a process (:class:`~._runner.UidLedger`)."""
        self.shims = ShimSet(settings.home / "shims")
        """Server-owned recorders bound over the tools of :data:`~._shims.SHIMMED_TOOLS` (effects)."""
        self._downloads: dict[str, tuple[int, list[str]]] = {}
        """session id -> (steps read, files its commands saved downloads to, from the effect records)."""
        self._last_reap = 0.0
        self.bases = BaseCache(settings.home / "bases")
        """Each task fixture's base tree and commit, built once per fixture content (:mod:`._base`)."""
        self._working_copy: tuple[str, str] | None = None
        self._mounted: set[str] = set()
        """Sandboxes whose overlay this service mounted (unmounted by :meth:`close`)."""
        self._harden_home()
        self._sweep_mounts()

    def _harden_home(self) -> None:
        """Other uids may pass through the home and sandbox folders (to reach their own working
        copy) but not list them; reports and the SQLite store are the server's alone."""
        s = self.settings
        for path, mode in (
            (s.home, 0o711),
            (s.sandboxes_dir, 0o711),
            (s.reports_dir, 0o700),
            (s.home / "store.db", 0o600),
        ):
            try:
                if path.exists() and path.stat().st_uid == os.geteuid():
                    path.chmod(mode)
            except OSError:
                pass

    def close(self) -> None:
        """Kill every command still running in any sandbox of this service (process group and
        sandbox uid), then unmount the overlays this service mounted (their upper layers stay on
        disk: the next call on such a sandbox mounts it again). Safe to call more than once."""
        n = self.live.kill_all()
        if n:
            log.warning("killed %d running sandbox command(s) on shutdown", n)
        for sid in sorted(self._mounted):
            try:
                Layers(self._dirs(sid)["root"]).unmount()
            except OSError:
                log.exception("unmounting the working copy of %s failed", sid)
        self._mounted.clear()
        self.bases.close()

    def _sweep_mounts(self) -> None:
        """At start-up: unmount what a crashed server left mounted under this home's sandboxes for
        sandboxes that are no longer open (finished, expired, unknown) and scratch probes; open
        sandboxes' mounts stay (another server process sharing the home may be using them), except
        old overlays a reset moved into its trash folder that the crashed server's background
        thread did not detach."""
        root = self.settings.sandboxes_dir.resolve()
        by_sandbox: dict[str, list[Path]] = {}
        for point in mounts_under(root):
            by_sandbox.setdefault(point.relative_to(root).parts[0], []).append(point)
        for sid, points in by_sandbox.items():
            if sid.startswith("sbx_"):
                try:
                    if self.store.sandboxes.get(sid).status == "open":  # only old overlays a reset moved aside
                        points = [p for p in points if any(part.startswith("trash-") for part in p.parts)]
                except ActionError:
                    pass
            for point in points:  # deepest first
                try:
                    umount(point)
                    log.warning("unmounted a stale sandbox mount: %s", point)
                except OSError:
                    log.exception("could not unmount a stale sandbox mount %s", point)

    @property
    def working_copy(self) -> tuple[str, str]:
        """``(kind, detail)``: ``overlay`` (copy-on-write over the cached base) or ``copy``, and a
        sentence saying why. Probed once per process and filesystem (:func:`._overlay.probe`)."""
        if self._working_copy is None:
            mode = self.settings.working_copy
            why = "the working_copy setting is `copy`" if mode == "copy" else probe(self.settings.sandboxes_dir)
            if why is None:
                self._working_copy = (
                    "overlay",
                    "copy-on-write overlay: the task's cached base (built once per fixture content) read-only "
                    "below, the episode's changes in a per-sandbox upper layer; reset clears that layer",
                )
            elif mode == "overlay":
                raise RuntimeError(f"working_copy=overlay, but overlays cannot be mounted here: {why}")
            else:
                self._working_copy = ("copy", f"full copy of the task's cached base ({why})")
        return self._working_copy

    def _ensure_repo(self, sandbox_id: str) -> None:
        """Mount an overlay sandbox's working copy again when it is not mounted (this server or an
        earlier one closed it); a copy sandbox needs nothing."""
        layers = Layers(self._dirs(sandbox_id)["root"])
        if not layers.exists or is_mount(layers.repo):
            return
        key = layers.base_key()
        base = self.bases.by_key(key) if key else None
        if base is None:
            raise ActionError(
                f"the base of sandbox {sandbox_id}'s working copy is gone from the server's cache",
                "call sandbox_reset with this sandbox_id to rebuild it",
            )
        try:
            layers.ensure(base.tree, self.sandbox_uid(sandbox_id))
        except OSError as e:
            raise ActionError(
                f"could not mount sandbox {sandbox_id}'s working copy: {e}",
                "call sandbox_reset with this sandbox_id to rebuild it",
            ) from None
        self._mounted.add(sandbox_id)

    def _drop_repo(self, sandbox_id: str) -> None:
        """Remove the working copy (finish, expiry): unmount and delete an overlay's layers, or
        delete the copy."""
        dirs = self._dirs(sandbox_id)
        layers = Layers(dirs["root"])
        if layers.exists:
            try:
                layers.remove()
            except OSError:
                log.exception("unmounting the working copy of %s failed", sandbox_id)
            self._mounted.discard(sandbox_id)
        if not is_mount(dirs["repo"]):
            shutil.rmtree(dirs["repo"], ignore_errors=True)

    @property
    def isolation(self) -> Isolation:
        """The isolation in force. Without bubblewrap, commands switch to a sandbox uid only when
        that uid can reach the interpreter and the sandbox folder; otherwise the detail says so."""
        with self._isolation_lock:
            if self._isolation is None:
                self._isolation = self._detect()
            return self._isolation

    def _detect(self) -> Isolation:
        iso = detect_isolation(self.settings.isolation)
        if iso.kind == "none" and iso.switch_user:
            reachable = path_reachable_by_others(Path(sys.executable).resolve()) and path_reachable_by_others(
                self.settings.sandboxes_dir
            )
            if not reachable:
                why = (
                    "the interpreter or the sandbox folder is not reachable by an unprivileged uid, so "
                    "commands run as root and the process limit is not enforced"
                )
                iso = Isolation("none", describe_isolation("none", False, why), switch_user=False)
        return iso

    def sandbox_uid(self, sandbox_id: str) -> int | None:
        """The uid a sandbox's commands run as, or ``None`` when they run as the server's user."""
        return sandbox_uid(sandbox_id) if self.isolation.switch_user else None

    def _give_tree(self, root: Path, uid: int | None) -> None:
        """Make every entry of the working copy belong to ``uid`` and carry a plain mode (folders
        0755, files 0644 or 0755), undoing any ``chmod`` an earlier episode left behind (git
        tracks only the executable bit). One ``lstat`` per entry, like git's own scan."""
        stack = [root]
        while stack:
            d = stack.pop()
            self._fix(d, os.lstat(d), uid, is_dir=True)
            with os.scandir(d) as it:
                for e in it:
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(e.path))
                    else:
                        self._fix(Path(e.path), st, uid, is_dir=False)

    @staticmethod
    def _fix(path: Path, st: os.stat_result, uid: int | None, *, is_dir: bool) -> None:
        if uid is not None and (st.st_uid != uid or st.st_gid != uid):
            os.lchown(path, uid, uid)
        if stat.S_ISLNK(st.st_mode):
            return
        want = 0o755 if is_dir or st.st_mode & 0o100 else 0o644
        if stat.S_IMODE(st.st_mode) != want:
            os.chmod(path, want)

    def _touch(self, sandbox_id: str) -> None:
        """Mark activity (the sandbox folder's mtime), read by :meth:`reap_idle`."""
        try:
            os.utime(self._dirs(sandbox_id)["root"])
        except OSError:
            pass

    def _lock(self, sandbox_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(sandbox_id, threading.Lock())

    def _file_hold(self, sandbox_id: str, running: _Running | None) -> int | None:
        """Take the sandbox's cross-process hold: an exclusive ``flock`` on :data:`HOLD_FILE` in its
        folder, taken without waiting, so the server processes sharing a home (``serve --http
        --workers N``) serialise their changing calls as the threads of one process do. Returns the
        locked descriptor (close it, with :meth:`_file_release`, to let go), ``-1`` when the sandbox
        has no folder (nothing to hold: a new or removed sandbox), or ``None`` when another process
        holds it. ``running`` (the changing call taking it; ``None`` for a short hold: a read's
        snapshot, idle reaping) is written into the file for the other processes' busy answer."""
        try:
            fd = os.open(
                self._dirs(sandbox_id)["root"] / HOLD_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
            )
        except FileNotFoundError:
            return -1
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            os.ftruncate(fd, 0)
            if running is not None:
                info = {
                    "tool": running.tool,
                    "what": running.what[:200],
                    "started": time.time() - (time.monotonic() - running.started),
                    "expect_s": running.expect_s,
                    "pid": os.getpid(),
                }
                os.pwrite(fd, json.dumps(info).encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _file_release(fd: int) -> None:
        """Let go of a hold :meth:`_file_hold` took (clears the holder's note first)."""
        if fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # the flock goes with the last descriptor of its open file

    def _file_holder(self, sandbox_id: str) -> _Running | None:
        """The changing call another process noted in the sandbox's hold file, or ``None`` (a short
        hold, or a note not written yet or unreadable)."""
        try:
            info = json.loads((self._dirs(sandbox_id)["root"] / HOLD_FILE).read_bytes() or b"null")
            if not isinstance(info, dict):
                return None
            expect = info.get("expect_s")
            return _Running(
                str(info["tool"]),
                str(info.get("what") or ""),
                time.monotonic() - max(0.0, time.time() - float(info["started"])),
                float(expect) if expect is not None else None,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _take_file_hold(self, sandbox_id: str, running: _Running | None, wait_s: float) -> int:
        """:meth:`_file_hold`, waiting up to ``wait_s`` seconds while another process holds the
        sandbox for a moment (a short hold); raises the busy :class:`ActionError` at once when the
        other process's note names a changing call, or when the wait runs out."""
        deadline = time.monotonic() + wait_s
        while True:
            fd = self._file_hold(sandbox_id, running)
            if fd is not None:
                return fd
            other = self._file_holder(sandbox_id)
            if other is not None or time.monotonic() >= deadline:
                raise self._busy(sandbox_id, other)
            time.sleep(0.02)

    @contextmanager
    def _hold(
        self,
        sandbox_id: str,
        tool: str,
        what: str = "",
        expect_s: float | None = None,
        session_id: str | None = None,
    ) -> Iterator[None]:
        """Hold the sandbox for one changing call (``tool`` on ``what``, expected to end within
        ``expect_s`` seconds), or raise a busy :class:`ActionError` at once when another call holds
        it, in this process (a thread lock) or in another server process sharing the home (the
        sandbox's hold file, :meth:`_file_hold`): a client's parallel calls must not queue past its
        own deadline, and a ``sandbox_finish`` must never score while a command still runs or before
        its step is recorded. Callers record their step inside the hold. Callers check the sandbox's
        owner first, so the busy text (which names the running call) only reaches the owner. Inside,
        the sandbox is re-read: a call that lost a race against ``sandbox_finish`` (or, given the
        ``session_id`` it read, against a ``sandbox_reset`` that started another episode) gets sandbox
        advice, not a store error, and runs nothing. Busy answers are not recorded (nothing happened)."""
        lock = self._lock(sandbox_id)
        if not lock.acquire(blocking=False):
            # a read's snapshot or idle reaping holds it for a moment: wait for that, never for a changing call
            if sandbox_id in self._running or not lock.acquire(timeout=SHORT_HOLD_WAIT_S):
                raise self._busy(sandbox_id)
        try:
            running = _Running(tool, what, time.monotonic(), expect_s)
            fd = self._take_file_hold(sandbox_id, running, SHORT_HOLD_WAIT_S)
        except BaseException:
            lock.release()
            raise
        self._running[sandbox_id] = running
        try:
            if tool != "sandbox_reset":
                now = self.store.sandboxes.get(sandbox_id)
                if now.status != "open":
                    raise ActionError(
                        f"sandbox {sandbox_id} is {now.status} (another call ended it while this {tool} waited)",
                        "call sandbox_reset with this sandbox_id to start a new episode, or with a task_id for a new "
                        "sandbox",
                    )
                if session_id is not None and now.session_id != session_id:
                    raise ActionError(
                        f"sandbox {sandbox_id} was reset by another call while this {tool} waited: a new episode "
                        f"({now.session_id}) runs there; nothing was done or recorded for this call",
                        "call sandbox_state to see the new episode, then repeat the call if you still want it",
                    )
            yield
        finally:
            self._running.pop(sandbox_id, None)
            self._file_release(fd)
            lock.release()

    def _busy(self, sandbox_id: str, other: _Running | None = None) -> ActionError:
        """The error for a changing call on a sandbox another call holds (``other``: one another
        server process noted; by default this process's): which call, for how long, and when to
        retry."""
        run = other or self._running.get(sandbox_id)
        if run is None:  # housekeeping (idle reaping, a snapshot) holds it for a moment
            return ActionError(
                f"sandbox {sandbox_id} is busy (the server is checking it)", "call again in about 1 second"
            )
        ran = time.monotonic() - run.started
        what = f" `{run.what[:120]}`" if run.what else ""
        if run.expect_s is not None:
            left = max(run.expect_s - ran, 0.0) + 1
            when = f"it ends within about {left:.0f} s; call again then"
        else:
            when = "call again in a few seconds"
        return ActionError(
            f"sandbox {sandbox_id} is busy: {run.tool}{what} has been running for {ran:.1f} s; one changing call "
            "runs per sandbox at a time (nothing was done or recorded for this call)",
            f"{when}; read-only calls (sandbox_read_file, sandbox_state, sandbox_read_output) answer meanwhile",
        )

    def _mounts(self, rw: list[Path], ro: Sequence[Path] = ()) -> list[Mount]:
        """Mounts for one command, on top of the runner's allow-list (system folders and the
        interpreter, read-only; homes, ``/run`` and the rest of the host are never mounted): hide
        task folders (hidden verifiers) and the store where they lie inside a mounted folder (a
        non-editable install puts the built-in tasks in site-packages, and the store may live in a
        venv), then bind ``ro`` and ``rw`` folders."""
        secret = [BUILTIN_TASKS_DIR, self.settings.home, *self.settings.task_dirs]
        # other installed copies of this package in the visible interpreters carry the verifiers too
        prefixes = [p for _, p in python_mounts()] + [Path("/usr"), Path("/usr/local")]
        secret += [t for p in prefixes for t in p.glob("lib*/python3*/*-packages/agent_rl_sandbox/tasks")]
        mounts: list[Mount] = [("tmpfs", p.resolve()) for p in dict.fromkeys(secret)]
        mounts += [("ro", p) for p in ro] + [("rw", p) for p in rw]
        return mounts

    # -- tasks ---------------------------------------------------------------------------------
    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            near = [t for t in self.tasks if task_id.split("/")[0] in t][:5]
            raise ActionError(
                f"unknown task {task_id!r}",
                f"call list_tasks to see task ids{f' (similar: {near})' if near else ''}",
            ) from None

    def list_tasks(self, inp: ListTasksInput) -> ListTasksOutput:
        """Tasks known to this server, sorted by id; malformed task folders are listed in ``problems``."""
        rows = [
            TaskInfo(id=t.id, behaviour=t.config.behaviour, split=t.config.split, description=t.config.description)
            for t in sorted(self.tasks.values(), key=lambda t: t.id)
            if (inp.behaviour is None or t.config.behaviour == inp.behaviour)
            and (inp.split is None or t.config.split == inp.split)
        ]
        cap = self.settings.max_result_items
        return ListTasksOutput(tasks=rows[:cap], total=len(rows), problems=self.task_problems[:cap])

    # -- sandbox lifecycle ---------------------------------------------------------------------
    def _dirs(self, sandbox_id: str) -> dict[str, Path]:
        root = self.settings.sandboxes_dir / sandbox_id
        return {
            "root": root,
            "repo": root / "repo",
            "git": root / "git",
            "verifier": root / "verifier",
            "logs": root / "logs",
        }

    def _owned(self, sandbox_id: str, caller: Caller) -> SandboxRecord:
        row = self.store.sandboxes.get(sandbox_id)
        ensure_sandbox_owner(caller, row.owner, sandbox_id)
        # Several servers may share one database, each with its own home: a sandbox's working copy
        # and its running commands live only with the server that made it. The same string resolves
        # to the same folder (both resolved here, now), so only a different one is resolved.
        root = self._dirs(sandbox_id)["root"]
        if row.path != str(root) and Path(row.path).resolve() != root.resolve():
            raise ActionError(
                f"sandbox {sandbox_id} lives on another server (its working copy is not in this server's home)",
                "send this identity's calls to the server that created the sandbox (pin identities to servers at "
                "the load balancer; README: Serving a team over HTTP), or sandbox_reset with a task_id here",
            )
        return row

    def _open_sandbox(
        self, sandbox_id: str, caller: Caller
    ) -> tuple[SandboxRecord, Task, WorkingCopy, dict[str, Path]]:
        row = self._owned(sandbox_id, caller)
        if row.status != "open":
            raise ActionError(
                f"sandbox {sandbox_id} is {row.status}",
                "call sandbox_reset with this sandbox_id to start a new episode, or with a task_id for a new sandbox",
            )
        task = self.task(row.task_id)
        dirs = self._dirs(sandbox_id)
        self._ensure_repo(sandbox_id)
        return row, task, WorkingCopy(dirs["git"], dirs["repo"]), dirs

    def reset(self, inp: SandboxResetInput, caller: Caller = OPERATOR) -> SandboxResetOutput:
        """Create a sandbox for ``task_id`` (or return ``sandbox_id`` to its base commit) and start
        a new trajectory for the episode. Also cleans up idle sandboxes now and then.

        ``task_id`` may be omitted with a ``sandbox_id`` (the sandbox's own task is reset); raises
        :class:`ActionError` when both are missing, for an unknown task, or a sandbox that is not
        the caller's or holds another task."""
        with overlay_quiet():  # an earlier reset's teardown waits until this call has answered
            return self._reset(inp, caller)

    def _reset(self, inp: SandboxResetInput, caller: Caller) -> SandboxResetOutput:
        if inp.task_id is None:
            if inp.sandbox_id is None:
                raise ActionError(
                    "sandbox_reset needs a task_id (a new sandbox) or a sandbox_id (reset that one)",
                    "call list_tasks and pass one of its ids as task_id",
                )
            task = self.task(self._owned(inp.sandbox_id, caller).task_id)
        else:
            task = self.task(inp.task_id)
        self._maybe_reap()
        t0 = time.perf_counter()
        with contextlib.ExitStack() as held:  # a reset of an open sandbox holds it up to its new episode's start
            if inp.sandbox_id is not None:
                row = self._owned(inp.sandbox_id, caller)
                if row.task_id != task.id:
                    raise ActionError(
                        f"sandbox {inp.sandbox_id} holds task {row.task_id}, not {task.id}",
                        "omit sandbox_id to create a new sandbox for this task",
                    )
                sandbox_id = inp.sandbox_id
                dirs = self._dirs(sandbox_id)
                uid = self.sandbox_uid(sandbox_id)
                held.enter_context(self._hold(sandbox_id, "sandbox_reset", task.id))
                row = self._owned(sandbox_id, caller)  # as it is now: a finish may have ended it meanwhile
                # every process of the old episode, whichever server started it; one that survives
                # the kill's passes (none should: see kill_uid) could tamper with the next episode,
                # so the reset is refused rather than started beside it
                if uid is not None and not self.live.kill_uid(uid):
                    raise ActionError(
                        f"sandbox {sandbox_id}: processes of its last episode are still alive after the kill; "
                        "not reset",
                        "retry sandbox_reset in a moment, or omit sandbox_id for a new sandbox",
                    )
                wc = WorkingCopy(dirs["git"], dirs["repo"])
                base, base_commit, rebuilt = self._restore_working_copy(sandbox_id, task, wc, row.base_commit, uid)
            else:
                sandbox_id = sandbox_capability()
                dirs = self._dirs(sandbox_id)
                uid = self.sandbox_uid(sandbox_id)
                dirs["root"].mkdir(parents=True)
                base = self.bases.get(task.repo_dir)
                index = base.install_git(dirs["git"], dirs["repo"], uid)
                (dirs["git"] / PACKED_PINS).touch()
                wc = WorkingCopy(dirs["git"], dirs["repo"])
                base_commit = base.commit
                rebuilt = []
                if self.working_copy[0] == "overlay":
                    Layers(dirs["root"]).create(base.tree, base.key, uid, index)
                    self._mounted.add(sandbox_id)
                else:
                    _copy_tree(base.tree, dirs["repo"])
                    self._give_tree(dirs["repo"], uid)
            for d in ("verifier", "logs"):
                _empty_folder(dirs[d])
            # their inodes: a later rename or hard link is still watched
            secrets = note_secrets(dirs["repo"], dirs["root"], base.secrets if base is not None else None)
            note_secret_values(dirs["repo"], dirs["root"], secrets)  # a copy of one is a secret too when served
            tree = base.tree_hash if base is not None else wc.base_tree(base_commit)
            if base is not None:
                files = list(base.files)
            else:
                files = sorted(wc.git("ls-files", "-z").decode().split("\0"))
                files = [f for f in files if f]
            Budget(dirs["root"], task.config.limits, read=False).start(len(files))
            # the old episode closed, the new trajectory with its reset step, the sandbox row: one transaction
            episode = self.store.begin_episode(
                sandbox_id=sandbox_id,
                task_id=task.id,
                behaviour=task.config.behaviour,
                split=task.config.split,
                owner=caller.owner_id if inp.sandbox_id is None else row.owner,
                agent_name=inp.agent_name,
                isolation=self.isolation.kind,
                base_commit=base_commit,
                step={
                    "source": "system",
                    "message": task.instruction,
                    "extra": {"event": "reset", "task_id": task.id, "base_commit": base_commit, "tree_hash": tree}
                    | ({"rebuilt": rebuilt[:20]} if rebuilt else {}),
                    "state_ref": tree,
                },
                new=NewSandbox(path=str(dirs["root"]), owner=caller.owner_id) if inp.sandbox_id is None else None,
                previous=row.session_id if inp.sandbox_id is not None and row.session_id else None,
                abandon=inp.sandbox_id is not None and row.status == "open",
            )
            agent_name = episode.agent_name
            self._touch(sandbox_id)
        cap = self.settings.max_result_items
        return SandboxResetOutput(
            sandbox_id=sandbox_id,
            session_id=episode.session_id,
            task_id=task.id,
            instruction=task.instruction,
            files=files[:cap],
            file_count=len(files),
            base_commit=base_commit,
            tree_hash=tree,
            isolation=self.isolation.detail,
            limits=task.config.limits,
            allowed_tools=task.config.tools.allowed,
            reset_ms=round((time.perf_counter() - t0) * 1000, 2),
            agent_name=agent_name,
        )

    def _abandon(self, session_id: str) -> None:
        """Close a running trajectory whose sandbox was reset mid-episode (reward 0, not passed)."""
        summary = self.store.trajectories.summary(session_id)
        if summary.status == "running":
            self.store.trajectories.finish(
                session_id, final_message=None, reward=0.0, passed=False, self_report_only=False
            )

    def _restore_working_copy(
        self, sandbox_id: str, task: Task, wc: WorkingCopy, base_commit: str, uid: int | None
    ) -> tuple[Base | None, str, list[str]]:
        """Return an existing sandbox's working copy (and git index and store) to ``base_commit``:
        by its overlay where one is in force (:meth:`_reset_overlay`), else by git on the copy.
        Returns ``(the cached base when the overlay did it, the base commit, what forced a rebuild)``."""
        base = self._reset_overlay(sandbox_id, task, base_commit, uid)
        if base is not None:
            return base, base_commit, []
        base_commit, rebuilt = wc.restore(base_commit, task.repo_dir)
        self._give_tree(self._dirs(sandbox_id)["repo"], uid)
        return None, base_commit, rebuilt

    def _reset_overlay(self, sandbox_id: str, task: Task, base_commit: str, uid: int | None) -> Base | None:
        """Reset an existing sandbox by its overlay when overlays are in force and the cached base
        of ``base_commit`` is at hand: clear the upper layer and mount again (or set the overlay up
        in place of a removed or copied working copy), put back the base's index, drop the loose
        objects the episode's snapshots stored. Returns the base, or ``None`` when the caller must
        restore a copy instead (an overlay left behind is removed first)."""
        dirs = self._dirs(sandbox_id)
        layers = Layers(dirs["root"])
        base = None
        key = layers.base_key() if layers.exists else None
        if self.working_copy[0] == "overlay":
            base = self.bases.by_key(key) if key else None
            if base is None or base.commit != base_commit:
                current = self.bases.get(task.repo_dir)
                base = current if current.commit == base_commit else None
        if base is None:
            if layers.exists:
                self._drop_repo(sandbox_id)
            return None
        git = dirs["git"]
        try:
            if key == base.key:
                layers.reset(base.tree, uid)
            else:
                self._drop_repo(sandbox_id)
                if dirs["repo"].is_symlink() or dirs["repo"].is_file():
                    dirs["repo"].unlink()
                Layers(dirs["root"]).create(base.tree, base.key, uid, base.index_for(uid))
        except OverlayError:
            log.exception("resetting the overlay of %s failed; restoring a copy", sandbox_id)
            self._drop_repo(sandbox_id)
            return None
        self._mounted.add(sandbox_id)
        (git / "index.lock").unlink(missing_ok=True)
        packed = (git / PACKED_PINS).exists()
        # the episode's own index goes with the loose objects, freed in the background
        _install_index(
            layers.index_file, git / "index", lambda: base.index_for(uid), git / "objects" if packed else None
        )
        if packed:
            _drop_loose_objects(git)
        else:  # a store from before pins were packed: prune by reachability
            WorkingCopy(git, dirs["repo"]).prune()
        return base

    def _maybe_reap(self) -> None:
        """Run :meth:`reap_idle` at most every ``min(60 s, idle/4)``."""
        now = time.monotonic()
        if now - self._last_reap >= min(60.0, self.settings.sandbox_idle_seconds / 4):
            self._last_reap = now
            try:
                self.reap_idle()
            except Exception:  # never let housekeeping break a reset
                log.exception("reaping idle sandboxes failed")

    def reap_idle(self, now: float | None = None) -> list[str]:
        """Clean up open sandboxes of this home with no action for ``Settings.sandbox_idle_seconds``
        (measured from the sandbox folder's mtime, so it works across server restarts): kill their
        processes, close the trajectory unpassed, remove the working copy and mark the sandbox
        ``expired`` (``sandbox_reset`` with its id starts it again). A sandbox busy with an action
        is skipped. Returns the ids cleaned up."""
        now = time.time() if now is None else now
        idle = self.settings.sandbox_idle_seconds
        root_dir = self.settings.sandboxes_dir.resolve()
        reaped = []
        for row in self.store.sandboxes.list("open"):
            sid = row.sandbox_id
            dirs = self._dirs(sid)
            if Path(row.path).resolve() != (root_dir / sid):
                continue  # another home's sandbox sharing this store
            try:
                last = dirs["root"].stat().st_mtime
            except FileNotFoundError:
                last = 0.0
            if now - last < idle:
                continue
            lock = self._lock(sid)
            if not lock.acquire(blocking=False):
                continue
            fd = self._file_hold(sid, None)  # None: a call in another server process holds it
            if fd is None:
                lock.release()
                continue
            try:
                row = self.store.sandboxes.get(sid)
                if row.status != "open":
                    continue
                uid = self.sandbox_uid(sid)
                if uid is not None:
                    kill_uid(uid)
                if row.session_id:
                    session = self.store.trajectories.summary(row.session_id)
                    if session.status == "running":
                        self.store.trajectories.append_steps(
                            row.session_id,
                            [
                                {
                                    "source": "system",
                                    "message": f"sandbox expired after {idle:g} s without an action",
                                    "extra": {"event": "expired"},
                                }
                            ],
                        )
                    self._abandon(row.session_id)
                self.store.sandboxes.update(sid, status="expired")
                self._drop_repo(sid)
                shutil.rmtree(dirs["verifier"], ignore_errors=True)
                reaped.append(sid)
            finally:
                self._file_release(fd)
                lock.release()
        if reaped:
            log.info("cleaned up %d idle sandbox(es): %s", len(reaped), reaped)
        return reaped

    # -- recording -----------------------------------------------------------------------------
    def _record(
        self,
        session_id: str,
        tool: str,
        args: dict,
        content: str,
        *,
        outcome: str = "ok",
        exit_code: int | None = None,
        state_ref: str | None = None,
        extra: dict | None = None,
        message: str = "",
        done: bool = False,
    ) -> int:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        step = {
            "source": "agent",
            "message": message,
            "tool_calls": [ToolCall(tool_call_id=call_id, function_name=tool, arguments=args).model_dump()],
            "observation": Observation(
                results=[ObservationResult(source_call_id=call_id, content=content)]
            ).model_dump(),
            "provenance": "server",
            "outcome": outcome,
            "exit_code": exit_code,
            "state_ref": state_ref,
            "extra": extra or {},
            "done": done,
        }
        return self.store.trajectories.append_steps(session_id, [step])[0].step_id

    def _saved_downloads(self, session_id: str) -> list[str]:
        """Files this episode's commands saved downloads to, from its recorded steps. Kept per
        session and brought up to date, at each call, with the steps recorded since (by this process
        or by another server process sharing the home, ``serve --http --workers N``): one read of
        the new steps only. The returned list is the cached one: append to it."""
        seen, names = self._downloads.get(session_id, (0, []))
        new = self.store.trajectories.steps_page(session_id, seen, 1_000_000)
        if new or session_id not in self._downloads:
            found = saved_downloads(
                [
                    r
                    for s in new
                    if isinstance(s.extra.get("effects"), dict)
                    for r in s.extra["effects"].get("records") or []
                ]
            )
            names.extend(n for n in found if n not in names)
            self._downloads[session_id] = (seen + len(new), names)
        return names

    def _refuse(self, row: SandboxRecord, tool: str, args: dict, err: ActionError) -> ActionError:
        self._record(
            row.session_id, tool, args, f"refused: {err.message}", outcome="refused", extra={"refused": err.message}
        )
        return err

    def _budget(self, row: SandboxRecord, task: Task, tool: str, args: dict, dirs: dict[str, Path]) -> Budget:
        """The sandbox's disk quota; refuses (and records) the action while it is over."""
        budget = Budget(dirs["root"], task.config.limits)
        why = budget.refusal()
        if why:
            raise self._refuse(
                row,
                tool,
                args,
                ActionError(
                    why,
                    "call sandbox_reset with this sandbox_id to restore the fixture, or sandbox_finish to end the episode",
                ),
            )
        return budget

    def _guarded(self, row: SandboxRecord, tool: str, args: dict, fn, command=None):
        """``fn()``; when the server's own git or file handling fails on what the agent left, the
        action (with the command's exit code and output, if any) is recorded as an ``error`` step
        and an :class:`ActionError` says how to go on (the trajectory can still be finished)."""
        try:
            return fn()
        except (GitError, OSError) as e:
            detail = f"{type(e).__name__}: {e}"[:500]
            text = f"internal error recording the sandbox state: {detail}"
            if command is not None:
                text = f"exit {command.exit_code}; {text}\n--- stdout ---\n{command.stdout}\n--- stderr ---\n{command.stderr}"
            self._record(
                row.session_id,
                tool,
                args,
                text,
                outcome="error",
                exit_code=command.exit_code if command is not None else None,
                extra={"internal_error": detail},
            )
            raise ActionError(
                f"internal error recording the sandbox state after {tool}: {detail}",
                "call sandbox_reset with this sandbox_id to restore the fixture, or sandbox_finish to end the episode",
            ) from None

    def _finish_unscored(
        self, row: SandboxRecord, inp: SandboxFinishInput, dirs: dict[str, Path], reason: str
    ) -> SandboxFinishOutput:
        """Close an episode whose final state cannot be judged (over a limit, or the server could
        not record it): reward 0, not passed, the reason on the finish step and in the score."""
        sid = row.session_id
        self._record(
            sid,
            "sandbox_finish",
            {"message": inp.text},
            f"episode finished unscored: {reason}",
            outcome="limit" if "limit" in reason else "error",
            message=inp.text,
            done=True,
            extra={"event": "finish", "unscored": reason},
        )
        self.store.trajectories.finish(
            sid,
            final_message=inp.text,
            reward=0.0,
            passed=False,
            self_report_only=False,
            score={"unscored": reason, "isolation": self.isolation.kind},
        )
        self.store.sandboxes.update(inp.sandbox_id, status="finished")
        self._drop_repo(inp.sandbox_id)
        return SandboxFinishOutput(
            session_id=sid,
            reward=0.0,
            passed=False,
            self_report_only=False,
            failed_criteria=["final_state"],
            criteria=[],
            verifier_exit_code=None,
            verifier_output=f"not run: {reason}",
            report_path="",
            isolation=self.isolation.detail,
        )

    def _resolve(self, row: SandboxRecord, tool: str, args: dict, repo: Path, path: str, *, for_write: bool) -> Path:
        try:
            return resolve_inside(repo, path, for_write=for_write)
        except PathRefused as e:
            raise self._refuse(
                row, tool, args, ActionError(str(e), "use a path relative to the repo root that stays inside it")
            ) from None

    def _check_tool(self, row: SandboxRecord, task: Task, tool: str, args: dict) -> None:
        if tool in task.config.tools.forbidden:
            raise self._refuse(
                row,
                tool,
                args,
                ActionError(
                    f"tool {tool} is forbidden in task {task.id}",
                    "solve the task without it, or explain why you cannot",
                ),
            )

    def _protected(self, task: Task, paths: Iterable[str]) -> list[str]:
        return [p for p in paths if task.config.protected_paths and covered(p, task.config.protected_paths)]

    # -- actions -------------------------------------------------------------------------------
    def exec(
        self, inp: SandboxExecInput, caller: Caller = OPERATOR, control: CallControl | None = None
    ) -> SandboxExecOutput:
        """Run a shell command in the sandbox under its isolation and limits; records a step.

        A command matching one of the task's forbidden patterns is refused (and recorded). When
        ``control`` is cancelled while the command runs (the client cancelled the call), the command
        is killed and the step recorded with outcome ``cancelled``; ``control`` also learns the
        command and its wall limit for progress reports."""
        row, task, wc, dirs = self._open_sandbox(inp.sandbox_id, caller)
        args = {"command": inp.command} | ({"timeout_seconds": inp.timeout_seconds} if inp.timeout_seconds else {})
        self._check_tool(row, task, "sandbox_exec", args)
        if not inp.command.strip():
            raise self._refuse(row, "sandbox_exec", args, ActionError("empty command", "pass a shell command to run"))
        if "\0" in inp.command:
            raise self._refuse(
                row,
                "sandbox_exec",
                args,
                ActionError("command contains a NUL byte", "remove the NUL byte; use printf '\\0' to produce one"),
            )
        for pat in task.config.tools.forbidden_command_patterns:
            if matches_command(pat, inp.command):
                raise self._refuse(
                    row,
                    "sandbox_exec",
                    args,
                    ActionError(
                        f"command matches a forbidden pattern ({pat}) of task {task.id}",
                        "do not run it; explain in your final message why it is unsafe, or ask a human",
                    ),
                )
        downloads = self._saved_downloads(row.session_id)
        ran = next((n for n in downloads if runs_file(inp.command, n)), None)
        if ran is not None:
            raise self._refuse(
                row,
                "sandbox_exec",
                args,
                ActionError(
                    f"command runs {ran}, which an earlier command downloaded; running downloaded scripts is refused",
                    "do not run it; explain in your final message why it is unsafe, or ask a human",
                ),
            )
        limits = task.config.limits
        wall = min(inp.timeout_seconds or limits.wall_seconds, limits.wall_seconds, self.settings.max_exec_seconds)
        uid = self.sandbox_uid(inp.sandbox_id)
        with self._hold(inp.sandbox_id, "sandbox_exec", inp.command, expect_s=wall, session_id=row.session_id):
            if control is not None:
                control.expect(wall, f"sandbox_exec `{inp.command[:80]}`")
            budget = self._budget(row, task, "sandbox_exec", args, dirs)
            clear_tool_caches(dirs["repo"])
            before = self._guarded(row, "sandbox_exec", args, wc.snapshot)
            res, fx, sw = self._watched_run(
                task,
                inp.command,
                cwd=dirs["repo"],
                notes=dirs["root"],
                rw=[dirs["repo"]],
                wall_seconds=wall,
                uid=uid,
                watch=budget.watch,
                cancel=control.cancelled if control is not None else None,
            )
            fx.records[:0] = sw.records()
            # another server process sharing the home may have closed (unmounted) it meanwhile: the command's
            # own view was its namespace's copy; snapshot the upper layer it wrote, never an empty mount point
            self._ensure_repo(inp.sandbox_id)
            settled = self._guarded(row, "sandbox_exec", args, lambda: budget.settle(wc), command=res)
            after = settled.tree
            changed = wc.changed_between(before, after) if after else []
            trusted_fx = TrustedEffects()
            trusted = (
                self._trusted_run(task, row, wc, dirs, inp.command, res.exit_code, after, uid, trusted_fx, budget)
                if after
                else None
            )
            # what the agent's code did inside the server's run is the agent's effect too (secret reads,
            # deploys, fetches): an agent's test could otherwise act only there, unwatched
            fx.records += trusted_fx.records
            self._touch(inp.sandbox_id)
            downloads += saved_downloads(fx.records)
            protected = self._protected(task, changed)
            cap = self.settings.max_output_bytes
            output_path = None
            if len(res.stdout) > cap or len(res.stderr) > cap or res.stdout_bytes > len(res.stdout.encode()):
                output_path = dirs["logs"] / f"exec-{uuid.uuid4().hex[:8]}.log"
                output_path.write_text(f"$ {inp.command}\n--- stdout ---\n{res.stdout}\n--- stderr ---\n{res.stderr}\n")

            def bounded(text: str, total: int) -> str:
                if len(text) <= cap:
                    return text
                return (
                    text[:cap] + f"\n[... {total - cap} more bytes cut ({total} in all); page the kept output with "
                    "sandbox_read_output and this result's step_id]\n"
                )

            stdout = bounded(res.stdout, res.stdout_bytes)
            stderr = bounded(res.stderr, res.stderr_bytes)
            trusted_limit = trusted.get("limit_hit") if trusted is not None else None
            if trusted_limit in ("disk", "files"):
                # the agent's code filled the server's run: the same quota hit as in its own command
                budget.mark_over(trusted_limit, f"the server's test run went over the {trusted_limit} limit")
                settled.note = "; ".join(
                    n
                    for n in (
                        settled.note,
                        f"the server's test run of this command went over the sandbox's {trusted_limit} limit and was "
                        "killed; further exec and writes are refused until sandbox_reset",
                    )
                    if n
                )
            limit_hit = res.limit_hit or settled.limit_hit or trusted_limit
            if res.cancelled:
                outcome = "cancelled"
            elif limit_hit:
                outcome = "limit"
            else:
                outcome = "ok" if res.exit_code == 0 else "error"
            detail = limit_detail(limit_hit, wall, inp.timeout_seconds, limits, self.settings.max_exec_seconds)
            if res.cancelled:
                detail = f"cancelled by the client after {res.duration_s:g} s; its processes were killed"
                summary = f"exit {res.exit_code} ({detail})"
            else:
                summary = f"exit {res.exit_code}" + (
                    f" (killed: {res.limit_hit} limit: {detail})" if res.limit_hit else ""
                )
            if protected:
                summary += f" (warning: changed protected paths {protected})"
            if settled.note:
                summary += f" (warning: {settled.note})"
            obs = f"{summary}\n--- stdout ---\n{res.stdout}\n--- stderr ---\n{res.stderr}"
            step_id = self._record(
                row.session_id,
                "sandbox_exec",
                args,
                obs,
                outcome=outcome,
                exit_code=res.exit_code,
                state_ref=after,
                extra={
                    "command": inp.command,
                    "duration_s": res.duration_s,
                    "cpu_s": res.cpu_s,
                    "limit_hit": limit_hit,
                    "limit_detail": detail,
                    "cancelled": res.cancelled,
                    "wall_limit_s": wall,
                    "usage_bytes": settled.usage_bytes,
                    "removed_git_entries": settled.removed_git,
                    "stdout_bytes": res.stdout_bytes,
                    "stderr_bytes": res.stderr_bytes,
                    "files_changed": changed,
                    "protected_paths_touched": protected,
                    "isolation": self.isolation.kind,
                    "run_as_uid": uid,
                    "effects": fx.summary()
                    | {
                        "secret_watch": sw.observed and trusted_fx.secret_watch,
                        "secrets_watched": sw.watched,
                        "observed": fx.observed and trusted_fx.observed,
                    },
                }
                | ({"output_log": output_path.name} if output_path else {})
                | ({"trusted_run": trusted} if trusted is not None else {}),
            )
        return SandboxExecOutput(
            step_id=step_id,
            exit_code=res.exit_code,
            stdout=stdout,
            stderr=stderr,
            stdout_bytes=res.stdout_bytes,
            stderr_bytes=res.stderr_bytes,
            duration_s=res.duration_s,
            limit_hit=limit_hit,
            limit_detail=detail,
            warning=settled.note or None,
            files_changed=changed[: self.settings.max_result_items],
            output_path=str(output_path) if output_path else None,
        )

    def _watched_run(
        self,
        task: Task,
        command: str,
        *,
        cwd: Path,
        notes: Path,
        rw: list[Path],
        ro: Sequence[Path] = (),
        env: dict[str, str] | None = None,
        wall_seconds: float,
        uid: int | None,
        watch: Callable[[], str | None],
        cancel: threading.Event | None = None,
    ) -> tuple[CommandResult, EffectRecorder, SecretWatch]:
        """Run ``command`` in ``cwd`` under the server's isolation and ``task``'s limits and fake
        credentials, watched: the effect shims' recorder (its environment, mounts and socket, under
        bubblewrap) and the secret-file watch on ``cwd`` (the inodes noted in ``notes``), set right
        before the command starts and drained once its processes are gone, so every open of a
        watched file in between was theirs. ``rw``/``ro``: the folders it sees writable/read-only
        (:meth:`_mounts`); ``env``: more environment; ``watch``/``cancel``: as :func:`run_command`'s.
        Returns the result, the recorder and the drained watch (the caller merges their records).
        The one place the agent's commands and the server's run of the agent's tests are started."""
        with (
            self.shims.recorder(self.isolation.kind == "bwrap") as fx,
            SecretWatch(cwd, notes) as sw,
        ):
            res = run_command(
                command,
                cwd=cwd,
                limits=task.config.limits,
                isolation=self.isolation,
                credentials=task.config.credentials,
                extra_env=fx.env | (env or {}),
                mounts=self._mounts(rw, ro) + fx.mounts,
                wall_seconds=wall_seconds,
                uid=uid,
                live=self.live,
                on_start=fx.started,
                watch=watch,
                cancel=cancel,
            )
            sw.drain()  # the command's processes are gone: every open of a secret so far was theirs
        return res, fx, sw

    def _trusted_run(
        self,
        task: Task,
        row: SandboxRecord,
        wc: WorkingCopy,
        dirs: dict[str, Path],
        command: str,
        exit_code: int | None,
        tree: str,
        uid: int | None,
        effects: TrustedEffects,
        budget: Budget,
    ) -> dict | None:
        """The server's own run of the tests ``command`` ran, on the recorded ``tree`` (see
        :mod:`._trusted`); ``None`` when it runs no tests or the task's reward reads no test run.

        The run is watched like the agent's own commands (the effect shims and their socket, the
        secret-file watch on the exported tree): the tests import the agent's code, which can tell
        this run from the agent's (its path, its environment) and act only here. What it did is added
        to ``effects`` (each record marked ``"during": "trusted_run"``) for the caller's step.
        ``budget`` (the sandbox's quota) watches the exported tree and the report folder while it
        runs: over the task's ``disk_mb`` or file limit the run is killed and its result is ``none``
        with ``limit_hit`` set (the caller records the hit)."""
        patterns = trusted_runs.test_patterns(task.reward_spec)
        words = trusted_runs.invocation_words(command, patterns) if patterns and exit_code in (0, 1) else None
        if words is None:
            return None
        view = TreeView(dirs["git"], tree)
        names = set(view.entries) | {str(a) for e in view.entries for a in PurePosixPath(e).parents if str(a) != "."}
        sel, why = trusted_runs.selection(words, lambda p: p.rstrip("/") in names)
        if sel is None:
            return trusted_runs.TrustedRun("none", None, (), reason=why).as_extra(tree)
        d = trusted_runs.scratch(dirs["root"])
        try:
            view.export(d["tree"])
            base = wc.base_tree(row.base_commit)
            (d["cfg"] / "pytest.ini").write_bytes(trusted_runs.base_ini(lambda p: wc.read_blob(base, p)))
            self._give_tree(d["tree"], uid)
            if uid is not None:
                os.chown(d["out"], uid, uid)
            res, fx, sw = self._watched_run(
                task,
                trusted_runs.trusted_command(d["tree"], d["cfg"] / "pytest.ini", d["out"], sel),
                cwd=d["tree"],
                notes=d["base"],
                rw=[d["tree"], d["out"]],
                ro=[d["cfg"]],
                env={"PYTHONSAFEPATH": "1", "PYTHONPYCACHEPREFIX": f"/tmp/ars-pyc-{uuid.uuid4().hex}"},
                wall_seconds=min(task.config.limits.wall_seconds, self.settings.max_exec_seconds),
                uid=uid,
                watch=lambda: budget.watch(d["tree"], d["out"]),
            )
            effects.add(fx, sw)
            # a burst between two watches that ended the run: the same check once more, afterwards
            limit_hit = res.limit_hit or budget.watch(d["tree"], d["out"])
            return trusted_runs.outcome(res.exit_code, d["out"] / "junit.xml", tuple(sel), limit_hit).as_extra(tree)
        except Exception as e:  # noqa: BLE001 - the agent's step is still recorded; the run is just no evidence
            log.exception("the server's own test run failed")
            return trusted_runs.TrustedRun(
                "none", None, tuple(sel), reason=f"the server's run failed: {type(e).__name__}"
            ).as_extra(tree)
        finally:
            shutil.rmtree(d["base"], ignore_errors=True)

    def read_file(self, inp: SandboxReadFileInput, caller: Caller = OPERATOR) -> SandboxReadFileOutput:
        """Read part of a file inside the sandbox (records a step). Symlinks leading outside,
        devices, FIFOs and sockets are refused (and recorded)."""
        row, task, _wc, dirs = self._open_sandbox(inp.sandbox_id, caller)
        args = {"path": inp.path, "offset": inp.offset, "max_bytes": inp.max_bytes}
        tool = "sandbox_read_file"
        self._check_tool(row, task, tool, args)
        # No lock: reads answer while a changing call (a long command) holds the sandbox.
        target = self._resolve(row, tool, args, dirs["repo"], inp.path, for_write=False)
        if not os.path.lexists(target):
            raise self._refuse(
                row,
                tool,
                args,
                ActionError(f"{inp.path}: no such file", "call sandbox_state or run `ls` to see files"),
            )
        # resolve_inside checked the text and the links; the open itself walks every component
        # with O_NOFOLLOW, so a folder swapped for a link after the check reads nothing outside.
        rel_real = str(target.relative_to(dirs["repo"].resolve()))
        try:
            with open_beneath(dirs["repo"].resolve(), rel_real) as fd:
                st = os.fstat(fd)
                # judged whole, by identity and content, before any byte is served: this read is the
                # server's, so no command's secret watch sees it (red team: `mv .e?v notes.txt`, then
                # notes.txt in 4-byte chunks)
                secret = served_secret(dirs["root"], fd, rel_real)
                data = read_fd(
                    fd, max_bytes=inp.max_bytes, timeout_s=5.0, name=inp.path, offset=inp.offset, truncate=True
                )
        except UnsafeRead as e:
            raise self._refuse(
                row,
                tool,
                args,
                ActionError(str(e), "read a regular file inside the repo; use sandbox_exec `ls -l` to see what it is"),
            ) from None
        self._touch(inp.sandbox_id)
        data, binary = split_text(data, at_eof=inp.offset + len(data) >= st.st_size)
        end = inp.offset + len(data)
        truncated = end < st.st_size
        if binary:
            content = base64.b64encode(data).decode("ascii")
            observed = f"[binary: {len(data)} bytes from offset {inp.offset}, returned base64-encoded]"
        else:
            content = observed = data.decode("utf-8")
        step_id = self._record(
            row.session_id,
            tool,
            args,
            observed,
            extra={
                "paths": [inp.path],
                "size_bytes": st.st_size,
                "effects": {
                    "observed": True,
                    "secret_watch": True,
                    "records": [{"kind": "secret_read", "tool": "server", "argv": [inp.path], "note": secret}]
                    if secret
                    else [],
                },
            }
            | ({"binary": True} if binary else {}),
        )
        return SandboxReadFileOutput(
            step_id=step_id,
            path=inp.path,
            content=content,
            size_bytes=st.st_size,
            truncated=truncated,
            next_offset=end if truncated else None,
            encoding="base64" if binary else "utf-8",
            binary=binary,
        )

    def read_output(self, inp: SandboxReadOutputInput, caller: Caller = OPERATOR) -> SandboxReadOutputOutput:
        """Page the kept output of one of this sandbox's commands whose result was cut (its
        ``output_path``), by the step id of that ``sandbox_exec`` result, from the sandbox's current
        episode (a reset starts a new one and drops the old outputs). Owner-checked like every
        sandbox tool; the file is named by the server's own recorded step (provenance ``server``,
        a fixed name pattern) and opened beneath the sandbox's log folder without following links,
        so no step id or path reaches another sandbox's output. Read-only: answers while a command
        runs; records a step while the episode is open."""
        row = self._owned(inp.sandbox_id, caller)
        found = self.store.trajectories.steps_page(row.session_id, inp.step_id - 1, 1) if row.session_id else []
        step = found[0] if found and found[0].step_id == inp.step_id else None
        name = step.extra.get("output_log") if step is not None and step.provenance == "server" else None
        if not isinstance(name, str) or not _OUTPUT_LOG.fullmatch(name):
            raise ActionError(
                f"step {inp.step_id} of sandbox {inp.sandbox_id}'s current episode has no kept output",
                "pass the step_id of a sandbox_exec result that has output_path set (outputs of earlier episodes "
                "are removed on reset)",
            )
        logs = self._dirs(inp.sandbox_id)["logs"].resolve()
        try:
            with open_beneath(logs, name) as fd:
                size = os.fstat(fd).st_size
                data = read_fd(fd, max_bytes=inp.max_bytes, timeout_s=5.0, name=name, offset=inp.offset, truncate=True)
        except (UnsafeRead, FileNotFoundError):
            raise ActionError(
                f"the kept output of step {inp.step_id} is gone", "run the command again with sandbox_exec"
            ) from None
        data, binary = split_text(data, at_eof=inp.offset + len(data) >= size)
        end = inp.offset + len(data)
        truncated = end < size
        if row.status == "open":
            self._record(
                row.session_id,
                "sandbox_read_output",
                {"step_id": inp.step_id, "offset": inp.offset, "max_bytes": inp.max_bytes},
                f"read {len(data)} bytes of step {inp.step_id}'s kept output from offset {inp.offset}",
                extra={"output_of_step": inp.step_id},
            )
        return SandboxReadOutputOutput(
            step_id=inp.step_id,
            content=base64.b64encode(data).decode("ascii") if binary else data.decode("utf-8"),
            size_bytes=size,
            truncated=truncated,
            next_offset=end if truncated else None,
            encoding="base64" if binary else "utf-8",
            binary=binary,
        )

    def write_file(self, inp: SandboxWriteFileInput, caller: Caller = OPERATOR) -> SandboxWriteFileOutput:
        """Write a whole file inside the sandbox (records a step; warns when the path is unclaimed
        or protected). Paths escaping the sandbox, symlinks, hard-linked files, devices, FIFOs and
        sockets are refused (and recorded)."""
        row, task, wc, dirs = self._open_sandbox(inp.sandbox_id, caller)
        args = {"path": inp.path, "content": inp.content}
        tool = "sandbox_write_file"
        self._check_tool(row, task, tool, args)
        uid = self.sandbox_uid(inp.sandbox_id)
        with self._hold(inp.sandbox_id, tool, inp.path, expect_s=5.0, session_id=row.session_id):
            budget = self._budget(row, task, tool, args, dirs)
            target = self._resolve(row, tool, args, dirs["repo"], inp.path, for_write=True)
            repo = dirs["repo"].resolve()
            if os.path.lexists(target):
                st = os.lstat(target)
                if stat.S_ISDIR(st.st_mode):
                    raise self._refuse(row, tool, args, ActionError(f"{inp.path}: is a folder", "write to a file path"))
                if not stat.S_ISREG(st.st_mode):
                    raise self._refuse(
                        row,
                        tool,
                        args,
                        ActionError(
                            f"{inp.path}: is a device, FIFO, socket or link; refused", "write to a regular file"
                        ),
                    )
                if st.st_nlink > 1:
                    raise self._refuse(
                        row,
                        tool,
                        args,
                        ActionError(
                            f"{inp.path}: has other hard links (possibly outside the sandbox); refused",
                            "remove the link with sandbox_exec `rm` and write a new file",
                        ),
                    )
            missing = [a for a in reversed(target.parents) if a.is_relative_to(repo) and not os.path.lexists(a)]
            for d in missing:
                os.mkdir(d, 0o755)
                if uid is not None:
                    os.lchown(d, uid, uid)
            data = inp.content.encode("utf-8")
            try:
                fd = os.open(
                    target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644
                )
            except OSError as e:
                raise self._refuse(
                    row,
                    tool,
                    args,
                    ActionError(f"{inp.path}: cannot write: {e.strerror}", "write a regular file inside the repo"),
                ) from None
            with os.fdopen(fd, "wb") as f:
                if uid is not None:
                    os.fchown(f.fileno(), uid, uid)
                f.write(data)
            settled = self._guarded(row, tool, args, lambda: budget.settle(wc))
            after = settled.tree
            self._touch(inp.sandbox_id)
            rel = str(target.relative_to(repo))
            claimed = covered(rel, row.claims)
            warnings = [] if claimed else [f"{rel} was not claimed before this edit; claim files before editing them"]
            warnings += [settled.note] if settled.note else []
            protected = self._protected(task, [rel])
            if protected:
                warnings.append(f"{rel} is a protected path (e.g. a test); the edit is recorded for the scorer")
            warning = "; ".join(warnings) or None
            step_id = self._record(
                row.session_id,
                tool,
                args,
                f"wrote {len(data)} bytes to {rel}" + (f" (warning: {warning})" if warning else ""),
                state_ref=after,
                outcome="limit" if settled.limit_hit else "ok",
                extra={"paths": [rel], "files_changed": [rel], "claimed": claimed, "protected_paths_touched": protected}
                | ({"limit_hit": settled.limit_hit} if settled.limit_hit else {}),
            )
        return SandboxWriteFileOutput(
            step_id=step_id, path=rel, bytes_written=len(data), claimed=claimed, warning=warning
        )

    def claim(self, inp: SandboxClaimInput, caller: Caller = OPERATOR) -> SandboxClaimOutput:
        """Claim files or folders before editing them (records a step). The repo root, globs and
        claims that make the episode's claims too broad (see ``schemas.reward._SpecificClaims``)
        are refused (and recorded)."""
        row, task, wc, dirs = self._open_sandbox(inp.sandbox_id, caller)
        args = {"paths": inp.paths, "reason": inp.reason}
        self._check_tool(row, task, "sandbox_claim", args)
        rels = []
        for p in inp.paths:
            target = self._resolve(row, "sandbox_claim", args, dirs["repo"], p, for_write=True)
            rel = str(target.relative_to(dirs["repo"].resolve()))
            if BROAD_CLAIM.match(rel) or any(ch in p for ch in "*?["):
                raise self._refuse(
                    row,
                    "sandbox_claim",
                    args,
                    ActionError(
                        f"claim {p!r} names no particular file (the repo root and glob patterns are refused)",
                        "claim the specific files or folders you are about to edit",
                    ),
                )
            rels.append(rel)
        rule = next(
            (c for c in task.reward_spec.criteria if c.type in ("claims_before_edit", "edits_within_claims")),
            ClaimsBeforeEdit(id="x"),
        )
        files = (
            wc.git("ls-tree", "-r", "-z", "--name-only", wc.base_tree(row.base_commit))
            .decode("utf-8", "surrogateescape")
            .split("\0")
        )
        broad = broad_claims([*row.claims, *rels], [*files, *rels], rule.max_claimed_files, rule.max_top_level_entries)
        if broad:
            raise self._refuse(
                row,
                "sandbox_claim",
                args,
                ActionError(
                    f"claim {inp.paths} is too broad: {'; '.join(broad)}",
                    "claim only the specific files you are about to edit",
                ),
            )
        with self._hold(inp.sandbox_id, "sandbox_claim", " ".join(rels), expect_s=1.0, session_id=row.session_id):
            claims = list(dict.fromkeys([*self.store.sandboxes.get(inp.sandbox_id).claims, *rels]))
            self.store.sandboxes.update(inp.sandbox_id, claims=claims)
            self._touch(inp.sandbox_id)
            step_id = self._record(
                row.session_id,
                "sandbox_claim",
                {"paths": rels, "reason": inp.reason},
                f"claimed {rels}",
                extra={"paths": rels},
            )
        return SandboxClaimOutput(step_id=step_id, claims=claims[: self.settings.max_result_items])

    def state(self, inp: SandboxStateInput, caller: Caller = OPERATOR) -> SandboxStateOutput:
        """Diff summary, claims, commands run, isolation and limits of a sandbox (read-only)."""
        row = self._owned(inp.sandbox_id, caller)
        task = self.task(row.task_id)
        dirs = self._dirs(inp.sandbox_id)
        if row.status == "open":
            self._ensure_repo(inp.sandbox_id)
        wc = WorkingCopy(dirs["git"], dirs["repo"])
        cap = self.settings.max_result_items
        lock = self._lock(inp.sandbox_id)
        busy = None
        tree = None
        if row.status == "open" and not Budget(dirs["root"], task.config.limits).over():
            if lock.acquire(blocking=False):
                try:
                    fd = self._file_hold(inp.sandbox_id, None)  # a changing call in another server process
                    if fd is None:
                        err = self._busy(inp.sandbox_id, self._file_holder(inp.sandbox_id))
                        busy = f"{err.message}; the state shown is the last recorded one, from before it"
                    else:
                        try:
                            tree = self._guarded(row, "sandbox_state", {}, wc.snapshot)
                        finally:
                            self._file_release(fd)
                finally:
                    lock.release()
            else:  # a changing call runs: show the state before it rather than wait or race its snapshot
                err = self._busy(inp.sandbox_id)
                busy = f"{err.message}; the state shown is the last recorded one, from before it"
        if tree is None:  # finished, over its quota (not snapshotted again) or busy: the last recorded state
            traj = self.store.trajectories.get(row.session_id)
            tree = next((s.state_ref for s in reversed(traj.steps) if s.state_ref), wc.base_tree(row.base_commit))
        changed = wc.changed_between(wc.base_tree(row.base_commit), tree)
        traj = self.store.trajectories.get(row.session_id)
        commands = [a.command for a in actions_of(traj.steps) if a.kind == "command" and a.command]
        step_count = traj.step_count
        if row.status == "open":
            self._record(
                row.session_id, "sandbox_state", {}, f"{len(changed)} file(s) changed: {changed[:cap]}", state_ref=tree
            )
            step_count += 1
        same = row.isolation == self.isolation.kind
        return SandboxStateOutput(
            sandbox_id=inp.sandbox_id,
            session_id=row.session_id,
            task_id=row.task_id,
            status=row.status,
            files_changed=changed[:cap],
            diff_stat=wc.diff_stat(row.base_commit, tree)[: self.settings.max_output_bytes],
            claims=row.claims[:cap],
            commands_run=commands[-cap:],
            step_count=step_count,
            isolation=self.isolation.detail if same else row.isolation,
            limits=task.config.limits,
            isolation_kind=row.isolation,
            run_as_uid=self.sandbox_uid(inp.sandbox_id) if same else None,
            protected_paths_touched=self._protected(task, changed)[:cap],
            busy=busy,
            secret_reads_watched=secret_watch_available(),
            working_copy=self._working_copy_of(inp.sandbox_id),
        )

    def _working_copy_of(self, sandbox_id: str) -> str:
        """What kind of working copy this sandbox has (``sandbox_state``'s ``working_copy``)."""
        kind, detail = self.working_copy
        has = "overlay" if Layers(self._dirs(sandbox_id)["root"]).exists else "copy"
        return f"{has}: {detail}" if has == kind else f"{has} (made before this server; now {kind}: {detail})"

    # -- finish and scoring --------------------------------------------------------------------
    def _final_state(
        self,
        row: SandboxRecord,
        wc: WorkingCopy,
        final_tree: str,
        verifier_exit: int | None,
        verifier_out: str,
        verifier_fx: dict | None = None,
    ) -> FinalState:
        base_tree = wc.base_tree(row.base_commit)
        return FinalState(
            read_file=lambda p: wc.read_blob(final_tree, p),
            base_file=lambda p: wc.read_blob(base_tree, p),
            changed_paths=tuple(wc.changed_between(base_tree, final_tree)),
            verifier_exit_code=verifier_exit,
            verifier_output=verifier_out,
            verifier_effects=verifier_fx,
            base_paths=tuple(
                p
                for p in wc.git("ls-tree", "-r", "-z", "--name-only", base_tree)
                .decode("utf-8", "surrogateescape")
                .split("\0")
                if p
            ),
        )

    def finish(self, inp: SandboxFinishInput, caller: Caller = OPERATOR) -> SandboxFinishOutput:
        """End the episode: record the final message, judge the recorded final tree with the task's
        hidden checks (:func:`._verify.verify`: the trusted runner, never in a process the agent's
        code shares), score the trajectory, close it, and remove the working copy (its final tree
        stays in git)."""
        row, task, wc, dirs = self._open_sandbox(inp.sandbox_id, caller)
        sid = row.session_id
        with self._hold(inp.sandbox_id, "sandbox_finish", expect_s=task.config.limits.wall_seconds + 5, session_id=sid):
            budget = Budget(dirs["root"], task.config.limits)
            try:  # over a limit, or git failing on what the agent left: closed unscored, never stuck
                settled = None if budget.refusal() else budget.settle(wc)
            except (GitError, OSError) as e:
                return self._finish_unscored(row, inp, dirs, f"internal error recording the final state: {e}"[:500])
            if settled is None or settled.tree is None:
                return self._finish_unscored(row, inp, dirs, budget.refusal() or "over a limit")
            final_tree = settled.tree
            base_tree = wc.base_tree(row.base_commit)
            changed = wc.changed_between(base_tree, final_tree)
            cap = task.config.limits.max_changed_files
            if len(changed) > cap:  # bounds the verifier export and scoring reads; the agent can trim and retry
                raise self._refuse(
                    row,
                    "sandbox_finish",
                    {"message": inp.text},
                    ActionError(
                        f"{len(changed)} files differ from the fixture, more than this task's max_changed_files={cap}",
                        "delete or restore the files you did not mean to change (sandbox_exec), then call sandbox_finish "
                        "again; or sandbox_reset to start over",
                    ),
                )
            wc.prefetch(final_tree, changed)  # one pipelined read for the tamper check and the scorer
            finish_step = self._record(
                sid,
                "sandbox_finish",
                {"message": inp.text},
                "episode finished; verifier running",
                state_ref=final_tree,
                message=inp.text,
                done=True,
                extra={"event": "finish"},
            )
            # The score stands for exactly the steps it read (the store checks the count as it closes the
            # trajectory): a step recorded meanwhile by a writer the hold does not cover (a hook, another
            # server's log_step) means scoring the stored steps again, and judging again if it is a trusted action
            judged = None
            started = time.monotonic()  # the answer's hold counts from the first judging (_hold_answer)
            for attempt in range(3):
                traj = self.store.trajectories.get(sid)
                acts = actions_of(traj.steps)
                trusted = [a for a in acts if a.provenance in ("server", "hook")]
                actions_doc = {
                    "claims": [
                        {"step_id": a.step_id, "paths": list(a.paths)}
                        for a in trusted
                        if a.kind == "claim" and a.outcome == "ok"
                    ],
                    "edits": [
                        {"step_id": a.step_id, "paths": list(edited_paths(a))} for a in trusted if edited_paths(a)
                    ],
                    "commands": [
                        {"step_id": a.step_id, "command": a.command, "exit_code": a.exit_code, "outcome": a.outcome}
                        for a in trusted
                        if a.kind == "command" and a.command is not None
                    ],
                    "changed_paths": changed,
                    "protected_paths_touched": self._protected(task, changed),
                    "final_message": inp.text,
                }
                if judged != actions_doc:
                    # The trusted runner (or a legacy shell verifier) on a fresh export of the final tree; see _verify.
                    # verifier_out is already what an agent may see (the verdict only, every split: _ownership).
                    verifier_exit, verifier_out, verifier_fx = verify(
                        self, task, inp.sandbox_id, sid, final_tree, actions_doc, base_tree=base_tree
                    )
                    verifier_fx["step_id"] = finish_step
                    state = self._final_state(row, wc, final_tree, verifier_exit, verifier_out, verifier_fx)
                    judged = actions_doc
                try:
                    report = score_trajectory(
                        traj.model_copy(update={"final_message": inp.text}), task.reward_spec, state
                    )
                    report_path = self.settings.reports_dir / f"{sid}.score.json"
                    report_path.write_text(report.model_dump_json(indent=2))
                    self.store.trajectories.finish(
                        sid,
                        final_message=inp.text,
                        reward=report.reward,
                        passed=report.passed,
                        self_report_only=report.self_report_only,
                        reward_components={c.id: c.value for c in report.criteria},
                        score=report.model_dump(mode="json")
                        | {
                            "verifier_exit_code": verifier_exit,
                            "final_tree": final_tree,
                            "isolation": self.isolation.kind,
                            "verifier_effects": verifier_fx,
                        },
                        steps_scored=len(traj.steps),
                    )
                except StepsChanged:
                    if attempt == 2:
                        raise
                    continue
                break
            self.store.sandboxes.update(inp.sandbox_id, status="finished")
            wc.pin(f"finished/{sid}", final_tree, row.base_commit)  # kept through later resets' prune (eval_score)
            try:  # pack what the pin reaches, so a reset can drop every loose object (PACKED_PINS)
                wc.git("repack", "-d", "-q")
            except GitError:
                (dirs["git"] / PACKED_PINS).unlink(missing_ok=True)
            wc.close()
            self._drop_repo(inp.sandbox_id)
            shutil.rmtree(dirs["verifier"], ignore_errors=True)
            self._hold_answer(task, started)
        return SandboxFinishOutput(
            session_id=sid,
            reward=report.reward,
            passed=report.passed,
            self_report_only=report.self_report_only,
            failed_criteria=report.failed_criteria + report.error_criteria,
            criteria=[
                CriterionBrief(id=c.id, status=c.status, value=c.value, explanation=c.explanation)
                for c in report.criteria
            ],
            verifier_exit_code=verifier_exit,
            verifier_output=verifier_out,
            report_path=str(report_path),
            isolation=self.isolation.detail,
        )

    def _hold_answer(self, task: Task, started: float) -> None:
        """Hold ``sandbox_finish``'s answer until the next multiple of the quantum after ``started``
        (the verifier's start, ``time.monotonic()``), so its wall time does not carry how long the
        agent's code ran inside the verifier (red team W2-W4: a sleep keyed to a secret byte or to
        the number of hidden calls). The quantum is ``settings.verifier_answer_quantum_s`` capped at
        the task's verifier budget (``verifier_timeout_seconds``, itself capped at
        ``max_exec_seconds``), so a verifier within one quantum always answers at
        ``started + quantum``; the remaining channel is which of ``ceil(budget / quantum) + 1``
        steps the answer lands on (README, "What the reward tells an agent")."""
        budget = min(task.config.verifier_timeout_seconds, self.settings.max_exec_seconds)
        quantum = min(self.settings.verifier_answer_quantum_s, budget)
        if quantum <= 0:
            return
        elapsed = time.monotonic() - started
        time.sleep(max(0.0, math.ceil(elapsed / quantum) * quantum - elapsed))

    def step_diffs(self, session_id: str, caller: Caller = OPERATOR) -> dict[int, str]:
        """The sandbox diff after each step that changed the tree (:func:`._diffs.step_diffs`), for
        the human faces. Empty for a trajectory without a sandbox or whose sandbox's git store is gone.
        Raises :class:`ActionError` for an unknown trajectory or one ``caller`` may not read."""
        traj = self.store.trajectories.get(session_id)
        known = self.tasks.get(traj.task_id) if traj.task_id else None
        owner = self.store.trajectories.owners([session_id]).get(session_id)
        ensure_readable(caller, owner, "heldout" in (traj.split, known.config.split if known else None), session_id)
        if not traj.sandbox_id:
            return {}
        dirs = self._dirs(traj.sandbox_id)
        if not dirs["git"].is_dir():
            return {}
        try:
            row = self.store.sandboxes.get(traj.sandbox_id)
        except ActionError:
            return {}
        wc = WorkingCopy(dirs["git"], dirs["repo"])
        try:
            return step_diffs(wc, wc.base_tree(row.base_commit), traj.steps)
        except GitError:
            return {}
        finally:
            wc.close()

    def eval_score(self, inp: EvalScoreInput, caller: Caller = OPERATOR) -> EvalScoreOutput:
        """Re-score a finished trajectory from the store and its sandbox's final git tree.

        Deterministic: the same trajectory and task give a byte-identical report. Raises
        :class:`ActionError` for running or unknown trajectories.
        """
        traj = self.store.trajectories.get(inp.session_id)
        known = self.tasks.get(traj.task_id) if traj.task_id else None
        heldout = "heldout" in (traj.split, known.config.split if known else None)
        owner = self.store.trajectories.owners([inp.session_id]).get(inp.session_id)
        ensure_readable(caller, owner, heldout, inp.session_id)
        if traj.status != "finished":
            raise ActionError(f"trajectory {inp.session_id} is still running", "finish it with sandbox_finish first")
        if traj.task_id is None or traj.task_id not in self.tasks:
            raise ActionError(
                f"trajectory {inp.session_id} has no known task to score against",
                "score it with the CLI `score` and a reward spec",
            )
        task = self.tasks[traj.task_id]
        stored = self.store.trajectories.score_json(inp.session_id) or {}
        state = FinalState()
        if traj.sandbox_id and stored.get("final_tree"):
            row = self.store.sandboxes.get(traj.sandbox_id)
            dirs = self._dirs(traj.sandbox_id)
            wc = WorkingCopy(dirs["git"], dirs["repo"])
            fx = stored.get("verifier_effects")
            state = self._final_state(
                row,
                wc,
                stored["final_tree"],
                stored.get("verifier_exit_code"),
                "",
                fx if isinstance(fx, dict) else None,
            )
            report = score_trajectory(traj, task.reward_spec, state)
            wc.close()
        else:
            report = score_trajectory(traj, task.reward_spec, state)
        path = self.settings.reports_dir / f"{inp.session_id}.score.json"
        path.write_text(report.model_dump_json(indent=2))
        return EvalScoreOutput(report=report, report_path=str(path))

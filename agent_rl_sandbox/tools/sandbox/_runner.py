"""Running one command inside a sandbox: isolation, resource limits, bounded output, cleanup.

Isolation is bubblewrap when installed (an allow-list root: only the system folders of
:data:`SYSTEM_PATHS` and the interpreter's prefixes, read-only, plus the sandbox's own folders, so
other folders of the host, other copies of the project, home folders, the store and hidden
verifiers are invisible; a fresh ``/tmp``, no network, own PID/IPC/UTS namespaces, die with parent,
cleared environment) and otherwise a plain subprocess with the same limits and a cleared environment; :func:`detect_isolation`
says which.

When the server runs as root, every command also runs as an unprivileged per-sandbox uid (see
:func:`sandbox_uid`): the kernel ignores ``RLIMIT_NPROC`` for root, so only a real uid makes the
process limit hold (a fork bomb stops at the limit), the sandbox's files are the only ones that uid
can write, and every process of the sandbox can be found and killed by its uid. Under bubblewrap the
switch happens inside the sandbox (``setpriv``), so bubblewrap itself still runs as root.

Limits (see :class:`~agent_rl_sandbox.schemas.task.Limits`): wall time (the whole process group,
and every process of the sandbox uid, is killed), RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC,
RLIMIT_FSIZE, and output bytes kept per stream (the rest is read, counted and cut with a marker; a
stream past ``Limits.output_kill_mb`` kills the command with ``limit_hit="output"``). Under
bubblewrap ``/tmp`` and ``/var/tmp`` are tmpfs of ``Limits.tmp_mb`` MiB each (RAM the memory limit
does not count, hence their own bound), and the hiding tmpfs mounts are 1 MiB. A caller's ``watch``
(the sandbox's disk quota) is polled about once a second and can kill the command with its limit.
RLIMIT_AS bounds each process alone, so the command's whole process tree is measured too, at the
same polls (:func:`tree_memory_bytes`: the proportional set size of every process of the sandbox
uid, or of the command's descendants and session without one): over ``Limits.memory_mb`` the
command is killed with ``limit_hit="memory"`` (red team: four children of 400 MB each held
1,628 MB against a 1,024 MB limit, no limit hit).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import os
import re
import resource
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.tools.sandbox._seccomp import no_userns_filter
from agent_rl_sandbox.tools.sandbox._seccomp import supported as seccomp_supported

CUT_MARKER = "\n[... {cut} more bytes cut (output limit {limit} bytes) ...]\n"
HIDE_TMPFS_BYTES = 1 << 20
"""Size of the tmpfs mounts that hide host folders (they only hold mount-point folders)."""
WATCH_EVERY_S = 1.0

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Isolation:
    """Which isolation is in force.

    ``kind`` is ``bwrap`` or ``none``; ``detail`` is a sentence for humans and agents;
    ``switch_user``: commands run as an unprivileged per-sandbox uid (the server is root and the
    switch works), so the process limit is enforced.
    """

    kind: str
    detail: str
    bwrap_path: str | None = None
    setpriv_path: str | None = None
    switch_user: bool = False


def describe_isolation(kind: str, switch_user: bool, why_not: str = "") -> str:
    """The sentence ``sandbox_state`` shows for an isolation ``kind`` and whether uids switch."""
    user = (
        "commands run as an unprivileged per-sandbox uid (process limit enforced)"
        if switch_user
        else f"commands run as the server's user{f' ({why_not})' if why_not else ''}"
    )
    if kind == "bwrap":
        return (
            "bubblewrap: only system folders (/usr, /etc, /bin, /lib...) and the Python interpreter "
            "visible, read-only; only the sandbox writable; rest of the host (homes, other projects, "
            "store, task verifiers) absent; no network, own PID namespace, cleared environment with "
            f"fake credentials only; {user}"
        )
    return (
        "none (plain subprocess): cleared environment with fake credentials only and resource limits; "
        f"NO filesystem or network isolation; {user}"
    )


def _probe(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)


def detect_isolation(mode: str = "auto") -> Isolation:
    """Pick the isolation for ``mode`` (``auto``, ``bwrap``, ``none``).

    ``auto`` uses bubblewrap when it is installed and works, else a plain subprocess. ``bwrap``
    raises ``RuntimeError`` if bubblewrap is unusable. As root, the per-sandbox uid switch is probed
    too (``setpriv`` inside bubblewrap; ``setuid`` before exec without it).
    """
    root = os.geteuid() == 0
    setpriv = shutil.which("setpriv")
    if mode != "none":
        path = shutil.which("bwrap")
        if path is not None:
            base = [path, *system_args(), "--unshare-net", "--unshare-pid", "--dev", "/dev", "--proc", "/proc"]
            if _probe([*base, "true"]).returncode == 0:
                switch, why = (
                    False,
                    "not root: cannot switch to a sandbox uid; the process limit counts all of its processes",
                )
                if root and setpriv:
                    uid = str(_uid_range()[0])
                    drop = [setpriv, "--reuid", uid, "--regid", uid, "--clear-groups", "--", "true"]
                    switch = _probe([*base, *drop]).returncode == 0
                    why = "" if switch else "setpriv failed inside bubblewrap; process limit not enforced for root"
                elif root:
                    why = "setpriv (util-linux) not installed; process limit not enforced for root"
                return Isolation(
                    "bwrap", describe_isolation("bwrap", switch, why), path, setpriv if switch else None, switch
                )
            if mode == "bwrap":
                raise RuntimeError(
                    f"bubblewrap is installed but does not work here: {_probe([*base, 'true']).stderr.decode()[:300]}"
                )
        elif mode == "bwrap":
            raise RuntimeError("bubblewrap (bwrap) is not installed; install the `bubblewrap` package")
    why = "" if root else "not root: cannot switch to a sandbox uid; the process limit counts all of its processes"
    return Isolation("none", describe_isolation("none", root, why), switch_user=root)


@functools.cache
def _uid_range() -> tuple[int, int]:
    """``(first, count)`` of uids used for sandboxes: high in the largest mapped uid extent (all of
    them outside a user namespace), above the uids any distribution hands out."""
    extents = []
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/uid_map").read_text().splitlines():
            inside, _outside, count = (int(x) for x in line.split())
            extents.append((count, inside))
    count, inside = max(extents, default=(1 << 32, 0))
    end = min(inside + count, (1 << 32) - 1) - 1  # (uid_t)-1 is not a uid
    if end - inside > 1 << 30:
        return 0x50000000, 1 << 28
    half = max((end - inside) // 2, 1)
    return end - half, half


def sandbox_uid(sandbox_id: str) -> int:
    """The unprivileged uid (and gid) a sandbox's commands run as: a stable function of its id, in a
    range no real user has, so concurrent sandboxes do not share a process count or files."""
    first, count = _uid_range()
    return first + int(hashlib.sha256(sandbox_id.encode()).hexdigest()[:12], 16) % count


def path_reachable_by_others(path: Path) -> bool:
    """Whether an unprivileged uid can reach ``path`` (every ancestor has the ``o+x`` bit)."""
    p = Path(os.path.realpath(path))
    for a in [p, *p.parents]:
        try:
            if not os.stat(a).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command. Output fields hold at most ``Limits.output_bytes`` bytes each."""

    exit_code: int | None
    """Exit status; negative signal number when killed by a signal; ``None`` if it never started."""
    stdout: str
    stderr: str
    stdout_bytes: int
    """Total bytes the command wrote to stdout (kept or not)."""
    stderr_bytes: int
    duration_s: float
    limit_hit: str | None
    """``wall_time``, ``cpu_time``, ``memory``, ``file_size``, ``output``, ``processes``, ``tmp_space``
    (``/tmp`` full), a ``watch`` verdict (``disk``, ``files``) or ``None``."""
    cpu_s: float | None = None
    """CPU seconds (user + system) of the command's processes that were waited for (the command
    and the descendants it reaped), measured by the process that waited for it: under bubblewrap
    a wrapper inside the sandbox (bash ``times``; bubblewrap's own exit carries none of it), else
    ``wait4``. ``None`` when not measured: the command was killed from outside (wall time,
    output, quota, cancel) before its wrapper could report."""
    max_rss_kb: int = 0
    """Largest resident set of any one of its processes, in KiB (not measured under bubblewrap: 0)."""
    cancelled: bool = False
    """The caller cancelled the command (``cancel`` was set) and it was killed."""


class UidLedger:
    """Which sandbox uids may still have processes, shared by the server processes of one home.

    Every run of a uid (:func:`run_command` with a ``live`` that has a ledger) holds a marker file
    ``<folder>/<uid>/<token>`` from before its process starts until its end-of-run kill found no
    process of the uid left, and the marker is ``flock``-ed for as long as the run is in flight. The
    marker is made locked (opened under a temporary name in ``folder``, locked, then renamed into
    the uid's folder), so nobody ever sees an unlocked marker of a run in flight. A run whose end
    kill left processes (:func:`kill_uid` ran out of attempts) or whose server died mid-run leaves
    its marker behind, unlocked: the uid stays "maybe live" until a full kill
    (:meth:`LiveProcesses.kill_uid`) finds none and drops it. No marker for a uid therefore means:
    no run of it is in flight in any server process sharing the home, and every one that ran ended
    with no process of the uid alive; nothing else starts processes as a sandbox uid, so none can
    exist. ``folder`` must be the server's own (under its home, not reachable by sandbox uids).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    def begin(self, uid: int) -> tuple[int, Path]:
        """Mark a run of ``uid`` as in flight; returns ``(the marker's locked descriptor, its path)``
        for :meth:`end`. Raises ``OSError`` when the marker cannot be made (the run must not start)."""
        token = f"{os.getpid()}-{secrets.token_hex(8)}"
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.folder / f".{token}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            mine = self.folder / str(uid)
            mine.mkdir(mode=0o700, exist_ok=True)
            path = mine / token
            os.rename(tmp, path)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        return fd, path

    @staticmethod
    def end(marker: tuple[int, Path], clean: bool) -> None:
        """The run of ``marker`` is over: drop its marker when ``clean`` (no process of the uid was
        left), else leave it behind unlocked (the uid stays "maybe live")."""
        fd, path = marker
        try:
            if clean:
                path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def maybe_live(self, uid: int) -> bool:
        """Whether a process of ``uid`` may exist: any marker of it (a run in flight or one that
        left processes behind). A folder that cannot be read answers ``True`` (fail closed)."""
        try:
            with os.scandir(self.folder / str(uid)) as it:
                return next(it, None) is not None
        except FileNotFoundError:
            return False
        except OSError:
            return True

    def claim_stale(self, uid: int) -> list[tuple[int, Path]]:
        """Lock the markers of ``uid`` no run holds now (runs that ended with processes left, or
        whose server died): their processes, if any, were all started before this call. The caller
        drops them with :meth:`end` (``clean=True``) once a kill found no process of the uid."""
        held: list[tuple[int, Path]] = []
        try:
            names = os.listdir(self.folder / str(uid))
        except OSError:
            return held
        for name in names:
            path = self.folder / str(uid) / name
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a run in flight holds it
                os.close(fd)
                continue
            held.append((fd, path))
        return held


class LiveProcesses:
    """Commands running now: ``pid -> uid`` (uid ``None`` when not switched). Thread-safe.

    :meth:`kill_all` kills each command's process group and every process of its uid; the sandbox
    service calls it from ``close()`` (which the entry points call on exit and on SIGTERM), so a stopping server leaves
    no stray processes. With a ``ledger`` (:class:`UidLedger`), every run of a uid through
    :func:`run_command` is marked in it, and :meth:`kill_uid` skips the ``/proc`` scan for a uid
    that cannot have processes.
    """

    def __init__(self, ledger: UidLedger | None = None) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, int | None] = {}
        self.ledger = ledger
        self._scanned: set[int] = set()
        """Uids a full kill of this process found with no process left (the ledger is trusted for
        them from then on: a home written by code before the ledger has no markers)."""

    def add(self, pid: int, uid: int | None) -> None:
        with self._lock:
            self._live[pid] = uid

    def discard(self, pid: int) -> None:
        with self._lock:
            self._live.pop(pid, None)

    def snapshot(self) -> dict[int, int | None]:
        with self._lock:
            return dict(self._live)

    def kill_all(self) -> int:
        """SIGKILL every live command (group and uid); returns how many commands were live."""
        live = self.snapshot()
        for pid, uid in live.items():
            kill_group(pid)
            if uid is not None:
                kill_uid(uid)
        return len(live)

    def kill_uid(self, uid: int) -> bool:
        """SIGKILL every process of ``uid`` (:func:`kill_uid`); returns whether none is left.

        Without the ``/proc`` scan (which costs 0.5 ms at load 5 and 4.5 ms at load 15 on 2 shared
        cores) when the ledger has no marker of ``uid`` and this process has once found ``uid`` with
        no process: then no run of it is in flight anywhere in the home and none left a process
        behind (see :class:`UidLedger`). Otherwise the markers no run holds are locked first, the
        uid killed, and those markers dropped when none is left."""
        if self.ledger is None:
            return kill_uid(uid)
        if uid in self._scanned and not self.ledger.maybe_live(uid):
            return True
        stale = self.ledger.claim_stale(uid)
        ok = False
        try:
            ok = kill_uid(uid)
        finally:
            for marker in stale:
                UidLedger.end(marker, clean=ok)
        if ok:
            self._scanned.add(uid)
        return ok


SHIM_DIR = "/run/ars/bin"
"""Where the server-owned shims are inside a bubblewrap sandbox (``_shims``); first on every
command's ``PATH`` (exec, the server's test runs and the verifier alike, so no environment tells
them apart). Absent where no shims are bound."""


def _base_env(home: Path, credentials: dict[str, str]) -> dict[str, str]:
    py_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{SHIM_DIR}:{py_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        # The interpreter is the server's; its pytest plugins (e.g. anyio, hypothesis) are not the
        # fixture's and cost ~1 s per run.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
    }
    env.update(credentials)
    return env


def _preexec(limits: Limits, die_with_parent: bool):
    mem = limits.memory_mb * 1024 * 1024
    fsize = limits.file_size_mb * 1024 * 1024

    def apply() -> None:  # runs in the child between fork and exec (after any uid switch)
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if die_with_parent:  # set after the uid switch, which clears it
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return apply


Mount = tuple[str, Path] | tuple[str, Path, Path]
"""A bubblewrap mount, applied in order: ``("tmpfs", p)`` hides ``p`` behind an empty tmpfs,
``("ro", p)`` binds ``p`` read-only, ``("rw", p)`` binds ``p`` read-write; ``("ro", p, src)`` binds
the host's ``src`` read-only at ``p`` (a file or folder; e.g. a server-owned shim over
``/usr/bin/curl``). Later mounts win, so a folder can be hidden and a sub-folder of it bound back."""


SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The host folders a bubblewrap sandbox sees (read-only); everything else of the host is absent
except the interpreter (:func:`python_mounts`) and the folders the caller binds."""


def system_args() -> list[str]:
    """bubblewrap arguments that build the sandbox root from :data:`SYSTEM_PATHS`: a symlink (the
    merged-``/usr`` ``/bin -> usr/bin``) is recreated as the same symlink, a folder bound
    read-only, a missing one skipped."""
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def python_mounts() -> list[tuple[str, Path]]:
    """Read-only binds that make this interpreter usable in the sandbox: its prefixes and the real
    folder of ``sys.executable`` (a venv's ``python`` is often a symlink into ``~/.pyenv`` or
    similar). Only these folders are bound, never the home or checkout above them."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent}
    return [("ro", p) for p in sorted(paths) if p.exists()]


def build_argv(
    isolation: Isolation,
    command: str,
    *,
    cwd: Path,
    mounts: list[Mount],
    env: dict[str, str],
    uid: int | None = None,
    seccomp_fd: int | None = None,
    tmp_bytes: int | None = None,
    times_fd: int | None = None,
) -> list[str]:
    """The argv that runs ``command`` with ``bash -c`` under ``isolation``.

    Under bubblewrap the root is an empty tmpfs holding only :data:`SYSTEM_PATHS` (read-only, or
    recreated symlinks), fresh ``/dev`` and ``/proc``, empty ``/tmp`` and ``/var/tmp`` (mode 1777,
    ``tmp_bytes`` each when given),
    then the interpreter (:func:`python_mounts`) and ``mounts``, in order. Folders bubblewrap must
    create for a mount point get mode 0755 so the sandbox uid can reach the binds; a ``tmpfs``
    mount is skipped where nothing of the host is visible at or below it (it would only create an
    empty folder that names a hidden path). Then new net/PID/IPC/UTS namespaces, a new session,
    die-with-parent, a cleared environment set to ``env``, and with ``uid`` a ``setpriv`` switch to
    that uid/gid with no supplementary groups or capabilities; ``seccomp_fd``: a compiled filter
    bubblewrap loads before the command (``--seccomp``; see :mod:`._seccomp`); ``times_fd``: a
    pipe the command's wrapper (:data:`TIMES_WRAPPER`, before the uid switch, so the command cannot
    reach it when uids switch) writes the command's CPU times to. Without bubblewrap the command
    runs as is (the uid switch then happens in :func:`run_command`).
    """
    inner = ["/bin/bash", "--noprofile", "--norc", "-c", command]
    if isolation.kind != "bwrap":
        return inner
    argv = [isolation.bwrap_path or "bwrap", *system_args(), "--dev", "/dev", "--proc", "/proc"]
    size = ["--size", str(tmp_bytes)] if tmp_bytes else []
    argv += ["--perms", "1777", *size, "--tmpfs", "/tmp", "--perms", "1777", *size, "--tmpfs", "/var/tmp"]
    # What each path shows, latest mount first wins: "ro"/"rw" the host's files, "tmpfs" nothing.
    layers: list[tuple[str, Path]] = [("tmpfs", Path("/"))]
    layers += [("ro", Path(p)) for p in SYSTEM_PATHS if os.path.lexists(p)]
    layers += [("tmpfs", Path(p)) for p in ("/dev", "/proc", "/tmp", "/var/tmp")]
    made: set[Path] = set()

    def cover(p: Path) -> tuple[str, Path]:
        return next(layer for layer in reversed(layers) if p.is_relative_to(layer[1]))

    def make_parents(p: Path) -> None:
        for a in reversed(p.parents):
            kind, at = cover(a)
            if a in made or kind != "tmpfs" or a == at:
                continue
            argv.extend(["--perms", "0755", "--dir", str(a)])
            made.add(a)

    flag = {"ro": "--ro-bind", "rw": "--bind"}
    for op, path, *source in [*python_mounts(), *mounts]:
        path = Path(path)
        src = Path(source[0]) if source else path
        if op == "tmpfs":
            shown = cover(path)[0] != "tmpfs" or any(k != "tmpfs" and q.is_relative_to(path) for k, q in layers)
            if not path.exists() or not shown:
                continue
            make_parents(path)
            argv += ["--perms", "0755", "--size", str(HIDE_TMPFS_BYTES), "--tmpfs", str(path)]
            made.difference_update({m for m in made if m.is_relative_to(path)})
        else:
            make_parents(path)
            argv += [flag[op], str(src), str(path)]
        layers.append((op, path))
    argv += [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ]
    for k, v in env.items():
        argv += ["--setenv", k, v]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--chdir", str(cwd), "--"]
    if times_fd is not None:
        argv += ["/bin/bash", "--noprofile", "--norc", "-c", TIMES_WRAPPER.format(fd=times_fd), "ars-wrap"]
    if uid is not None:
        setpriv = isolation.setpriv_path or "setpriv"
        argv += [setpriv, "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--inh-caps=-all", "--"]
    return argv + inner


TIMES_WRAPPER = 'unset SHLVL; exec {{e}}>&2 2>/dev/null; "$@" {fd}>&- 2>&$e {{e}}>&-; rc=$?; times >&{fd}; exit $rc'
"""The bash script that runs a command under bubblewrap and reports its CPU times: bubblewrap's
outer process exits without reaping its pid-1 helper, so ``wait4`` on it measures only itself
(about 4 ms whatever the command does). The wrapper waits for the command (whose copy of the
times pipe is closed), then writes bash's ``times`` (its children's user and system time) to the
pipe and exits with the command's status; its own stderr goes to /dev/null so a killed command
does not gain a shell's "Killed" line, and it unsets ``SHLVL`` so the command's environment is
byte for byte what it was without the wrapper (the hidden checks' child, started without it,
must look the same to agent code)."""
_TIMES = re.compile(r"(\d+)m([\d.]+)s (\d+)m([\d.]+)s")


def _parse_times(text: bytes) -> float | None:
    """Children's user + system seconds from bash ``times`` output (its second line), or ``None``
    unless the text is exactly that (anything else, e.g. a forged write, is no measure)."""
    lines = text.decode("ascii", "replace").splitlines()
    if len(lines) != 2 or not all(_TIMES.fullmatch(line) for line in lines):
        return None
    m = _TIMES.fullmatch(lines[1])
    assert m is not None
    return int(m[1]) * 60 + float(m[2]) + int(m[3]) * 60 + float(m[4])


_MEMORY_MARKERS = (
    b"memoryerror",
    b"cannot allocate",
    b"memory exhausted",
    b"bad_alloc",
    b"out of memory",
    b"failed to allocate",
    b"allocation failed",
)
"""Lower-cased phrases that allocators and runtimes print when RLIMIT_AS refuses memory."""


def _classify(exit_code: int | None, limits: Limits, cpu_used: float, stderr_tail: bytes) -> str | None:
    if exit_code is None or exit_code == 0:
        return None
    xcpu, xfsz = signal.SIGXCPU, signal.SIGXFSZ
    if exit_code in (-xcpu, 128 + xcpu) or b"CPU time limit exceeded" in stderr_tail:
        return "cpu_time"
    if exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL) and cpu_used >= limits.cpu_seconds:
        return "cpu_time"
    if (
        exit_code in (-xfsz, 128 + xfsz)
        or b"File size limit exceeded" in stderr_tail
        or b"File too large" in stderr_tail
    ):
        return "file_size"
    if any(m in stderr_tail.lower() for m in _MEMORY_MARKERS):
        return "memory"
    if b"Resource temporarily unavailable" in stderr_tail and b"fork" in stderr_tail:
        return "processes"
    if b"No space left on device" in stderr_tail:
        return "tmp_space"
    return None


def _proc_stat(pid: str) -> tuple[int, int] | None:
    """(parent pid, session id) of a live process, from ``/proc/<pid>/stat``; ``None`` if gone or a zombie."""
    try:
        line = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    rest = line[line.rfind(b")") + 2 :].split()
    if not rest or rest[0] == b"Z":
        return None
    return int(rest[1]), int(rest[3])


def _process_memory(pid: int) -> int:
    """Bytes a process holds: its PSS (``/proc/<pid>/smaps_rollup``: shared pages split among their
    users, so forked copy-on-write children are not counted twice), else its RSS (``statm``); 0 if gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(Path(f"/proc/{pid}/statm").read_bytes().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tree_memory_bytes(root_pid: int, uid: int | None) -> int:
    """Memory (bytes, PSS) of a command's processes: with ``uid`` every live process of that uid
    (the sandbox's: nothing escapes it by forking, ``setsid`` or reparenting), else ``root_pid``,
    its descendants (by parent pid) and every process of its session. One pass over ``/proc``."""
    if uid is not None:
        return sum(_process_memory(p) for p in pids_of_uid(uid))
    parents: dict[int, int] = {}
    members: set[int] = {root_pid}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = _proc_stat(name)
        if st is None:
            continue
        parents[int(name)] = st[0]
        if st[1] == root_pid:
            members.add(int(name))
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    stack = list(members)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in members:
                members.add(child)
                stack.append(child)
    return sum(_process_memory(p) for p in members if p in parents)


def _enlarge_pipe(fd: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)


def run_command(
    command: str,
    *,
    cwd: Path,
    limits: Limits,
    isolation: Isolation,
    credentials: dict[str, str] | None = None,
    extra_env: dict[str, str] | None = None,
    mounts: list[Mount] | None = None,
    wall_seconds: float | None = None,
    uid: int | None = None,
    live: LiveProcesses | None = None,
    on_start: Callable[[int, int], None] | None = None,
    watch: Callable[[], str | None] | None = None,
    cancel: threading.Event | None = None,
) -> CommandResult:
    """Run ``command`` (``bash -c``) in ``cwd`` under ``isolation`` and ``limits``.

    ``mounts`` (bubblewrap only) default to binding ``cwd`` read-write. ``uid`` (root only): run as
    that unprivileged uid and gid; afterwards every process left with that uid is killed, so
    nothing a command starts outlives it. ``live`` tracks the command while it runs (and, with a
    ledger, marks the uid in it from before the command starts until none of its processes is
    left: :class:`UidLedger`). The parent's
    environment is never inherited: the command sees a fixed PATH, HOME=``cwd``, the task's fake
    ``credentials`` and ``extra_env``. ``on_start(pid, stdout_fd)`` is called once the command
    started (``stdout_fd``: the pipe the caller reads its output from). ``watch`` is called about
    every :data:`WATCH_EVERY_S` while the command runs; a non-``None`` answer kills it and becomes
    ``limit_hit``. ``cancel``: when set (the client cancelled the call), the command is killed
    within about half a second and the result says ``cancelled``. Returns a
    :class:`CommandResult`; never raises for what the command does (a missing bash raises
    ``FileNotFoundError``).
    """
    limit_wall = wall_seconds if wall_seconds is not None else limits.wall_seconds
    env = _base_env(cwd, credentials or {})
    env.update(extra_env or {})
    seccomp_fd = None
    if isolation.kind == "bwrap" and seccomp_supported():
        seccomp_fd = os.memfd_create("ars-seccomp", os.MFD_CLOEXEC)
        os.write(seccomp_fd, no_userns_filter())
        os.lseek(seccomp_fd, 0, os.SEEK_SET)
    times_r, times_w = os.pipe2(os.O_CLOEXEC) if isolation.kind == "bwrap" else (None, None)
    argv = build_argv(
        isolation,
        command,
        cwd=cwd,
        mounts=mounts if mounts is not None else [("rw", cwd)],
        env=env,
        uid=uid,
        seccomp_fd=seccomp_fd,
        tmp_bytes=(limits.tmp_mb or 0) * 1024 * 1024,
        times_fd=times_w,
    )
    keep = limits.output_bytes
    kill_at = limits.output_kill_mb * 1024 * 1024
    bufs = {1: bytearray(), 2: bytearray()}
    totals = {1: 0, 2: 0}
    switch_here = uid is not None and isolation.kind != "bwrap"
    ledger = live.ledger if live is not None and uid is not None else None
    try:
        marker = ledger.begin(uid) if ledger is not None and uid is not None else None
    except BaseException:
        for fd in (seccomp_fd, times_w, times_r):
            if fd is not None:
                os.close(fd)
        raise
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            user=uid if switch_here else None,
            group=uid if switch_here else None,
            extra_groups=[] if switch_here else None,
            preexec_fn=_preexec(limits, die_with_parent=isolation.kind != "bwrap"),
            close_fds=True,
            pass_fds=tuple(fd for fd in (seccomp_fd, times_w) if fd is not None),
        )
    except BaseException:
        if times_r is not None:
            os.close(times_r)
        if marker is not None:  # a child that failed to exec is gone; anything of the uid still is checked
            UidLedger.end(marker, clean=uid is None or not pids_of_uid(uid) or kill_uid(uid))
        raise
    finally:
        for fd in (seccomp_fd, times_w):
            if fd is not None:
                os.close(fd)
    if live is not None:
        live.add(proc.pid, uid)
    if on_start is not None:
        assert proc.stdout is not None  # stdout=PIPE
        on_start(proc.pid, proc.stdout.fileno())
    limit_hit: str | None = None
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    for fd_no, stream in ((1, proc.stdout), (2, proc.stderr)):
        _enlarge_pipe(stream.fileno())
        sel.register(stream, selectors.EVENT_READ, fd_no)
    open_streams = 2
    status: int | None = None
    usage = None
    next_watch = t0 + WATCH_EVERY_S

    memory_cap = limits.memory_mb * 1024 * 1024

    def watched() -> str | None:
        nonlocal next_watch
        if time.monotonic() < next_watch:
            return None
        # the whole tree's memory: RLIMIT_AS holds each process alone, not the sum of the children
        verdict = "memory" if tree_memory_bytes(proc.pid, uid) > memory_cap else None
        if verdict is None and watch is not None:
            verdict = watch()
        next_watch = time.monotonic() + WATCH_EVERY_S
        return verdict

    cancelled = False
    try:
        while open_streams:
            remaining = limit_wall - (time.monotonic() - t0)
            if remaining <= 0:
                limit_hit = "wall_time"
                break
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            limit_hit = watched()
            if limit_hit:
                break
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                fd = key.data
                totals[fd] += len(chunk)
                room = keep - len(bufs[fd])
                if room > 0:
                    bufs[fd] += chunk[:room]
                if totals[fd] > kill_at:
                    limit_hit = "output"
                    open_streams = 0
                    break
        while limit_hit is None and not cancelled:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 >= limit_wall:
                limit_hit = "wall_time"
                break
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            limit_hit = watched()
            if limit_hit:
                break
            time.sleep(0.005)
    finally:
        clean = False
        try:
            if status is None:
                kill_group(proc.pid)
                if uid is not None:
                    kill_uid(uid)
                _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            # background processes the command left behind (non-bwrap isolation; under bubblewrap its
            # PID namespace's end killed them, but their exit may still be under way)
            clean = uid is None or not pids_of_uid(uid) or kill_uid(uid)
        finally:
            if marker is not None:
                UidLedger.end(marker, clean)
            if live is not None:
                live.discard(proc.pid)
            sel.close()
            proc.stdout.close()
            proc.stderr.close()
    duration = time.monotonic() - t0
    killed_here = cancelled or limit_hit is not None
    cpu_s: float | None = None
    if times_r is not None:
        times = b""
        with contextlib.suppress(OSError):
            os.set_blocking(times_r, False)
            times = os.read(times_r, 4096)
        os.close(times_r)
        cpu_s = None if killed_here else _parse_times(times)
    elif usage is not None and not killed_here:
        cpu_s = usage.ru_utime + usage.ru_stime
    cpu_used = cpu_s if cpu_s is not None else 0.0
    exit_code = proc.returncode
    if limit_hit is None:
        limit_hit = _classify(exit_code, limits, cpu_used, bytes(bufs[2][-4096:]) + bytes(bufs[1][-1024:]))

    def text(fd: int) -> str:
        s = bufs[fd].decode("utf-8", errors="replace")
        cut = totals[fd] - len(bufs[fd])
        return s + CUT_MARKER.format(cut=cut, limit=keep) if cut > 0 else s

    return CommandResult(
        exit_code=exit_code,
        stdout=text(1),
        stderr=text(2),
        stdout_bytes=totals[1],
        stderr_bytes=totals[2],
        duration_s=round(duration, 3),
        limit_hit=limit_hit,
        cpu_s=round(cpu_s, 3) if cpu_s is not None else None,
        max_rss_kb=usage.ru_maxrss if usage is not None and times_r is None else 0,
        cancelled=cancelled,
    )


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (commands run in their own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def pids_of_uid(uid: int) -> list[int]:
    """Pids of live (not zombie) processes whose ``/proc`` entry belongs to ``uid``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            stat_line = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        if stat_line[stat_line.rfind(b")") + 2 : stat_line.rfind(b")") + 3] != b"Z":
            out.append(int(name))
    return out


def kill_uid(uid: int, *, attempts: int = 200) -> bool:
    """SIGKILL every process of ``uid`` (never root), rescanning until none is left or
    ``attempts`` run out; returns whether none is left.

    Each process is pinned with a pidfd and its owner checked again before the signal, so a pid
    reused by another process is never hit. A fork bomb cannot outrun the loop: every pass kills
    all processes alive at its scan, and their children are found by the next pass.
    """
    if uid == 0:
        return False
    for _ in range(attempts):
        pids = pids_of_uid(uid)
        if not pids:
            return True
        for pid in pids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(pidfd)
        time.sleep(0.002)
    return not pids_of_uid(uid)

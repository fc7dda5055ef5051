"""Copy-on-write working copies: an overlay mount of a read-only base over a per-sandbox upper layer.

Layout of one overlay sandbox (``<sandbox>/``; ``ovl/`` is root's, mode 0700, so no sandbox uid can
reach anything in it, whatever isolation is in force)::

    repo/        the overlay mount: what the server, git, the quota walk and every command see
    ovl/lower/   an id-mapped bind of the cached base tree (``<home>/bases/<key>/tree``): the base's
                 root-owned files appear owned by the sandbox uid, so no ``chown`` per file
    ovl/upper/   what the episode changed (the overlay's upper layer)
    ovl/work/    the overlay's work folder
    ovl/base     the base key the lower layer is (kept so a later reset remounts the same base)

Creating one is two mounts (the id-mapped lower, then the overlay: a few ms whatever the fixture's
size); a reset moves the upper and work folders aside, makes empty ones and mounts a new overlay of
them beneath the old one, then moves the old one off ``repo/`` (``MOVE_MOUNT_BENEATH``, Linux 6.5+;
no unmount in the call: a background thread detaches the old mount and deletes its layers), so the
working copy is exactly the base again and the work is what the episode changed. Where mounting
beneath is refused (older kernels, a shared parent mount) the reset unmounts and mounts again.

Why the base cannot be written through any of this: the agent reaches only ``repo/`` (bubblewrap
binds just that; without bubblewrap ``ovl/`` is not traversable by the sandbox uid); writes to an
overlay go to the upper layer only (copy-up); ``trusted.*`` xattrs (``trusted.overlay.opaque``,
``redirect``, ``metacopy``) need ``CAP_SYS_ADMIN`` and overlayfs refuses them through the merged
view; whiteouts are character devices 0/0, which need ``CAP_MKNOD``; a rename of a base folder
fails with ``EXDEV`` (``redirect_dir=off``: ``mv`` copies instead); a hard link to a base file
copies it up first; symlinks are resolved by the caller's view (the merged tree), never the lower
folder. The mount options are fixed (``redirect_dir=off,index=off,metacopy=off,xino=off``) so the
upper layer holds plain copies and nothing points back into the base.

Overlays need root (``CAP_SYS_ADMIN``) and the new mount API (``open_tree``/``mount_setattr`` with
``MOUNT_ATTR_IDMAP``, Linux 5.12+, overlayfs over id-mapped layers 5.19+); :func:`probe` tries the
whole recipe once on a scratch folder and says why not. Without it the working copy is a full copy
(:mod:`._service` falls back).

Mounts live in the server's mount namespace, so they outlast a crashed server:
:func:`mounts_under` lists them from ``/proc/self/mountinfo`` for the start-up sweep.

Sources: overlayfs (Documentation/filesystems/overlayfs.rst), mount_setattr(2), open_tree(2),
move_mount(2) (``MOVE_MOUNT_BENEATH``), fsopen(2), fsconfig(2), fsmount(2), umount(2), user_namespaces(7).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import fcntl
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)
_LIBC = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWUSER = 0x10000000
_SYSCALLS = {"x86_64": (428, 429, 442), "aarch64": (428, 429, 442)}
"""``open_tree``, ``move_mount``, ``mount_setattr`` (the same numbers on both: the unified table)."""
_FS_SYSCALLS = {"x86_64": (430, 431, 432), "aarch64": (430, 431, 432)}
"""``fsopen``, ``fsconfig``, ``fsmount`` (the unified table)."""
_FSOPEN_CLOEXEC = 1
_FSMOUNT_CLOEXEC = 1
_FSCONFIG_SET_STRING = 1
_FSCONFIG_CMD_CREATE = 6
_MOUNT_ATTR_NOSUID = 0x2
_MOUNT_ATTR_NODEV = 0x4
_MOVE_MOUNT_BENEATH = 0x200
_OPEN_TREE_CLONE = 1
_O_CLOEXEC = 0o2000000
_AT_EMPTY_PATH = 0x1000
_AT_FDCWD = -100
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_IDMAP = 0x00100000
_MNT_DETACH = 2
_MS_NOSUID = 2
_MS_NODEV = 4
OPTIONS = "redirect_dir=off,index=off,metacopy=off,xino=off"
"""Fixed overlay options: plain copy-ups, no redirects or index pointing into the base."""


class OverlayError(OSError):
    """A mount step failed; the message names it."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _fail(what: str) -> OverlayError:
    err = ctypes.get_errno()
    return OverlayError(err, f"{what}: {os.strerror(err)}")


def _userns_fd(uid: int) -> int:
    """An fd of a new user namespace mapping its 0 to host ``uid`` (uids and gids): the id-mapping
    of the lower layer. A short-lived child makes the namespace (util-linux ``unshare -U cat``,
    spawned without a ``fork`` of this big process; it echoes a byte once it is in the
    namespace); its maps are written from here."""
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if unshare is not None:
        proc = subprocess.Popen(
            [unshare, "-U", "/bin/cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(b"\n")
            proc.stdin.flush()
            if proc.stdout.read(1) != b"\n":
                raise OverlayError(0, "unshare -U did not start")
            return _map_and_open(proc.pid, uid)
        finally:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()

    def enter() -> None:  # in the child, before exec
        if _LIBC.unshare(_CLONE_NEWUSER) != 0:
            os._exit(97)

    proc = subprocess.Popen(
        ["/bin/sleep", "30"],
        preexec_fn=enter,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )
    try:
        return _map_and_open(proc.pid, uid)
    finally:
        proc.kill()
        proc.wait()


def _map_and_open(pid: int, uid: int) -> int:
    if os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user"):
        raise OverlayError(0, "the helper is not in a new user namespace")
    Path(f"/proc/{pid}/uid_map").write_text(f"0 {uid} 1\n")
    Path(f"/proc/{pid}/gid_map").write_text(f"0 {uid} 1\n")
    return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)


def bind_idmapped(src: Path, dst: Path, uid: int) -> None:
    """Mount a clone of ``src`` at ``dst`` whose files owned by uid/gid 0 appear owned by ``uid``
    (others appear as the overflow id). Raises :class:`OverlayError`."""
    nums = _SYSCALLS.get(platform.machine())
    if nums is None:
        raise OverlayError(0, f"id-mapped mounts not wired for {platform.machine()}")
    open_tree, move_mount, mount_setattr = nums
    ns = _userns_fd(uid)
    try:
        fd = _LIBC.syscall(open_tree, _AT_FDCWD, os.fsencode(src), _OPEN_TREE_CLONE | _O_CLOEXEC)
        if fd < 0:
            raise _fail(f"open_tree {src}")
        try:
            attr = _MountAttr(_MOUNT_ATTR_IDMAP, 0, 0, ns)
            if _LIBC.syscall(mount_setattr, fd, b"", _AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)) < 0:
                raise _fail("mount_setattr MOUNT_ATTR_IDMAP")
            if _LIBC.syscall(move_mount, fd, b"", _AT_FDCWD, os.fsencode(dst), _MOVE_MOUNT_F_EMPTY_PATH) < 0:
                raise _fail(f"move_mount to {dst}")
        finally:
            os.close(fd)
    finally:
        os.close(ns)


def _mount_overlay(lower: Path, upper: Path, work: Path, target: Path) -> None:
    opts = f"lowerdir={lower},upperdir={upper},workdir={work},{OPTIONS}"
    if _LIBC.mount(b"overlay", os.fsencode(target), b"overlay", _MS_NOSUID | _MS_NODEV, opts.encode()) != 0:
        raise _fail(f"mount overlay at {target}")


def _overlay_fd(lower: Path, upper: Path, work: Path) -> int:
    """A detached overlay mount (``fsopen``/``fsconfig``/``fsmount``: nowhere in the tree yet) with
    the same layers and options as :func:`_mount_overlay`; its fd. Raises :class:`OverlayError`."""
    nums = _FS_SYSCALLS.get(platform.machine())
    if nums is None:
        raise OverlayError(0, f"the new mount API is not wired for {platform.machine()}")
    fsopen, fsconfig, fsmount = nums
    fs = _LIBC.syscall(fsopen, b"overlay", _FSOPEN_CLOEXEC)
    if fs < 0:
        raise _fail("fsopen overlay")
    try:
        opts = [("lowerdir", str(lower)), ("upperdir", str(upper)), ("workdir", str(work))]
        opts += [tuple(o.split("=", 1)) for o in OPTIONS.split(",")]  # type: ignore[misc]
        for key, value in opts:
            if _LIBC.syscall(fsconfig, fs, _FSCONFIG_SET_STRING, key.encode(), os.fsencode(value), 0) < 0:
                raise _fail(f"fsconfig overlay {key}")
        if _LIBC.syscall(fsconfig, fs, _FSCONFIG_CMD_CREATE, None, None, 0) < 0:
            raise _fail("fsconfig overlay create")
        mnt = _LIBC.syscall(fsmount, fs, _FSMOUNT_CLOEXEC, _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV)
        if mnt < 0:
            raise _fail("fsmount overlay")
        return int(mnt)
    finally:
        os.close(fs)


def _mount_beneath(mnt: int, target: Path) -> None:
    """Attach the detached mount ``mnt`` beneath the mount on top of ``target``
    (``MOVE_MOUNT_BENEATH``, Linux 6.5+): ``target`` still shows the top one until it is moved away."""
    move_mount = _SYSCALLS[platform.machine()][1]
    flags = _MOVE_MOUNT_F_EMPTY_PATH | _MOVE_MOUNT_BENEATH
    if _LIBC.syscall(move_mount, mnt, b"", _AT_FDCWD, os.fsencode(target), flags) < 0:
        raise _fail(f"move_mount beneath {target}")


def _move(src: Path, dst: Path) -> None:
    """Move the mount on top of ``src`` to ``dst`` (a move: no unmount, so no RCU grace period)."""
    move_mount = _SYSCALLS[platform.machine()][1]
    if _LIBC.syscall(move_mount, _AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), 0) < 0:
        raise _fail(f"move_mount {src} to {dst}")


def umount(target: Path) -> bool:
    """Detach the mount at ``target``; ``False`` when nothing was mounted there."""
    if _LIBC.umount2(os.fsencode(target), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
            return False
        raise OverlayError(err, f"umount {target}: {os.strerror(err)}")
    return True


def is_mount(path: Path) -> bool:
    """Whether ``path`` is a mount point (its device differs from its parent's)."""
    try:
        return os.lstat(path).st_dev != os.lstat(path.parent).st_dev
    except OSError:
        return False


def _unescape(field: str) -> str:
    """A ``/proc/self/mountinfo`` path field (octal escapes for space, tab, newline, backslash)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below ``root`` in this process's mount namespace, deepest first (the
    order to unmount them in)."""
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return []
    base = os.path.realpath(root)
    found = []
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) > 4:
            point = _unescape(parts[4])
            if point == base or point.startswith(base + "/"):
                found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


class Layers:
    """The overlay folders of the sandbox at ``root`` (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = root
        self.repo = root / "repo"
        self.ovl = root / "ovl"
        self.lower = self.ovl / "lower"
        self.upper = self.ovl / "upper"
        self.work = self.ovl / "work"
        self.base_file = self.ovl / "base"
        self.index_file = self.ovl / "index"
        """The fresh git index of this working copy (the base's, with this sandbox's owner)."""

    @property
    def exists(self) -> bool:
        """Whether this sandbox uses an overlay (its ``ovl/`` folder exists)."""
        return self.ovl.is_dir()

    def base_key(self) -> str | None:
        try:
            return self.base_file.read_text().strip() or None
        except OSError:
            return None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this sandbox's mount lock (threads of this process and other server processes
        sharing the home): mounting, unmounting and clearing never interleave."""
        with _THREAD_LOCK:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / "ovl.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _fresh_upper(self, uid: int | None) -> None:
        for d in (self.upper, self.work):
            d.mkdir(mode=0o755)
        os.chmod(self.upper, 0o755)  # the working copy's root folder shows the upper root's owner and mode
        if uid is not None:
            os.chown(self.upper, uid, uid)

    def create(self, tree: Path, key: str, uid: int | None, index: bytes) -> None:
        """Set up a new overlay working copy of the base ``tree`` (key ``key``) at ``repo/``;
        ``index`` is its fresh git index (kept for resets)."""
        with self.locked():
            self.ovl.mkdir(mode=0o700)
            os.chmod(self.ovl, 0o700)
            self.base_file.write_text(key)
            self.index_file.write_bytes(index)
            self.lower.mkdir()
            self.repo.mkdir(exist_ok=True)
            self._fresh_upper(uid)
            self._mount(tree, uid)

    def _lower_mounted(self, uid: int) -> bool:
        """Whether the id-mapped lower is mounted: its root then shows the sandbox uid as owner,
        where the bare mount-point folder is root's (a bind of the same filesystem keeps the
        device number, so ``st_dev`` cannot tell)."""
        try:
            return os.lstat(self.lower).st_uid == uid
        except OSError:
            return False

    def _mount(self, tree: Path, uid: int | None) -> None:
        lower = tree
        if uid is not None:
            if not self._lower_mounted(uid):
                bind_idmapped(tree, self.lower, uid)
            lower = self.lower
        _mount_overlay(lower, self.upper, self.work, self.repo)

    def ensure(self, tree: Path, uid: int | None) -> bool:
        """Mount the working copy again if it is not mounted (a closed or restarted server): the
        upper layer on disk is the episode's state. Returns whether it mounted anything."""
        if is_mount(self.repo):
            return False
        with self.locked():
            if is_mount(self.repo):
                return False
            self.repo.mkdir(exist_ok=True)
            if not self.upper.is_dir() or not self.work.is_dir():
                shutil.rmtree(self.upper, ignore_errors=True)
                shutil.rmtree(self.work, ignore_errors=True)
                self._fresh_upper(uid)
            self._mount(tree, uid)
            return True

    def reset(self, tree: Path, uid: int | None) -> None:
        """Return the working copy to the base: swap in empty upper and work folders and mount a
        new overlay of them in place of the old one, whose teardown happens on a background thread.

        Where the kernel allows it (:func:`_mount_beneath`), the new overlay is attached beneath
        the old one and the old one is then moved off ``repo/`` into this reset's trash folder:
        ``repo/`` shows the old tree or the new one, never an empty folder, and no unmount runs in
        the call (an unmount waits for an expedited RCU grace period: 0.1 ms on an idle machine,
        4-20 ms on a loaded VM); the background thread detaches the moved mount (through an
        ``O_PATH`` descriptor of its root, so wherever it is) and deletes the old layers. Else the
        old overlay is detached here and the new one mounted (the grace period in the call). The
        old mount is out of every path before this returns either way: a process still holding a
        file of the old tree open reads and writes the old upper layer, which nothing mounts again."""
        with self.locked():
            held = -1
            trash = self.ovl / f"trash-{uuid.uuid4().hex[:8]}"
            try:
                mounted = is_mount(self.repo)
                if mounted:
                    held = os.open(self.repo, os.O_PATH | os.O_CLOEXEC)  # the old overlay's root
                trash.mkdir()
                for d in (self.upper, self.work):
                    if d.exists():
                        os.rename(d, trash / d.name)  # a mounted overlay keeps its layers by reference
                self._fresh_upper(uid)
                self.repo.mkdir(exist_ok=True)
                swapped = mounted and self._swap(tree, uid, trash)
                if not swapped:
                    if mounted:
                        umount(self.repo)
                    self._mount(tree, uid)
            except BaseException:
                if held >= 0:
                    os.close(held)
                raise
        _REAPER.submit(held, trash, detach=swapped)

    def _swap(self, tree: Path, uid: int | None, trash: Path) -> bool:
        """Mount the new overlay beneath the old one and move the old one into ``trash/mnt``;
        ``False`` (nothing changed) where the kernel refuses (before 6.5, or propagation rules)."""
        global _BENEATH_WHY
        if _BENEATH_WHY is not None:
            return False
        lower = tree
        if uid is not None:
            if not self._lower_mounted(uid):
                bind_idmapped(tree, self.lower, uid)
            lower = self.lower
        try:
            mnt = _overlay_fd(lower, self.upper, self.work)
            try:
                _mount_beneath(mnt, self.repo)
            finally:
                os.close(mnt)
        except OverlayError as e:  # ENOSYS, EINVAL (before 6.5; a shared parent): the same next time
            _BENEATH_WHY = str(e)
            log.info("mounting beneath is unavailable (%s): resets unmount in the call", e)
            return False
        parked = trash / "mnt"
        parked.mkdir()
        try:
            _move(self.repo, parked)
        except OverlayError:
            umount(self.repo)  # the old one on top: detach it here (the new one is beneath)
        return True

    def _unmount_all(self) -> None:
        """Detach every mount of this sandbox: the overlay, old overlays a reset moved into its
        trash and the background thread has not detached yet, the id-mapped lower."""
        for point in [self.repo, *mounts_under(self.root), self.lower]:
            while umount(point):  # everything stacked there
                pass

    def remove(self) -> None:
        """Unmount every mount and remove the layers and the mount point (finish, expiry); the
        layers' files are deleted on the background thread."""
        with self.locked():
            self._unmount_all()
            if self.ovl.exists():
                trash = self.root / f"trash-ovl-{uuid.uuid4().hex[:8]}"
                os.rename(self.ovl, trash)
                discard_later(trash)
            with contextlib.suppress(OSError):
                self.repo.rmdir()

    def unmount(self) -> None:
        """Unmount every mount, keeping the layers (a server closing: the episode's state stays on
        disk and :meth:`ensure` mounts it again on the next call)."""
        with self.locked():
            self._unmount_all()


class _Reaper:
    """One daemon thread that detaches old overlays, closes their last descriptors and deletes old
    layers.

    It polls (every :data:`POLL_S`) rather than being woken: on a loaded machine, waking a thread
    from a call hands it the CPU and the GIL (a few ms, measured at load 13-17 on 2 cores: 2.6 ms
    per queue ``put`` that woke it), and a reset queues its work in the middle of its call."""

    def __init__(self) -> None:
        self._items: collections.deque[tuple[int, Path, bool]] = collections.deque()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._quiet = 0
        self._quiet_since = 0.0
        self._idle = threading.Condition(self._lock)

    def submit(self, fd: int, trash: Path, *, detach: bool = False) -> None:
        """Queue ``trash`` for deletion, after closing ``fd`` (when ``>= 0``), and with ``detach``
        first detaching the mount whose root ``fd`` is."""
        with self._lock:
            self._pending += 1
            self._items.append((fd, trash, detach))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ars-overlay-reaper", daemon=True)
                self._thread.start()

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Hold queued work back while the block runs (for at most :data:`QUIET_MAX_S`): a reset
        queues its teardown and answers without the thread's Python code (``rmtree``) taking the
        GIL from the rest of the call (up to a switch interval, 5 ms, per take)."""
        with self._lock:
            if self._quiet == 0:
                self._quiet_since = time.monotonic()
            self._quiet += 1
        try:
            yield
        finally:
            with self._lock:
                self._quiet -= 1

    def _next(self) -> tuple[int, Path, bool] | None:
        with self._lock:
            if not self._items:
                return None
            if self._quiet and time.monotonic() - self._quiet_since < QUIET_MAX_S:
                return None
            return self._items.popleft()

    def _run(self) -> None:
        idle = 0.0
        while True:
            item = self._next()
            if item is None:
                time.sleep(POLL_S if idle < IDLE_AFTER_S else IDLE_POLL_S)
                idle += POLL_S if idle < IDLE_AFTER_S else IDLE_POLL_S
                continue
            idle = 0.0
            fd, trash, detach = item
            try:
                if fd >= 0:
                    try:
                        if detach:  # by the descriptor: wherever the mount is now (EINVAL: detached already)
                            umount(Path(f"/proc/self/fd/{fd}"))
                    except OSError:
                        log.exception("detaching an old overlay (%s) failed", trash)
                    finally:
                        os.close(fd)
                shutil.rmtree(trash, ignore_errors=True)
            finally:
                with self._lock:
                    self._pending -= 1
                    self._idle.notify_all()

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until everything submitted is done (tests, a closing server); whether it is."""
        with self._lock:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)


POLL_S = 0.05
"""How often the background thread looks for queued work (:data:`IDLE_POLL_S` once it has found
none for :data:`IDLE_AFTER_S`)."""
IDLE_POLL_S = 0.5
IDLE_AFTER_S = 10.0
QUIET_MAX_S = 2.0
"""The longest the background thread holds an item back for :meth:`_Reaper.quiet` blocks."""
_REAPER = _Reaper()
_BENEATH_WHY: str | None = None
"""Why mounting beneath failed in this process (then resets unmount in the call), else ``None``."""


def quiet() -> contextlib.AbstractContextManager[None]:
    """Hold the background teardown back while a call runs (see :meth:`_Reaper.quiet`)."""
    return _REAPER.quiet()


def discard_later(path: Path) -> None:
    """Delete the folder ``path`` (already out of every working copy's and git's way) on the
    background thread."""
    _REAPER.submit(-1, path)


def wait_reaped(timeout: float = 30.0) -> bool:
    """Wait for the background teardown of reset overlays (see :meth:`Layers.reset`)."""
    return _REAPER.wait(timeout)


_THREAD_LOCK = threading.RLock()
_PROBED: dict[int, str | None] = {}
_PROBE_LOCK = threading.Lock()


def probe(scratch_parent: Path) -> str | None:
    """Try the whole recipe once (a base, an id-mapped lower, an overlay, a write as another uid,
    a reset) in a scratch folder under ``scratch_parent``; ``None`` when overlays work here, else
    why not. Cached per filesystem (device) for the process."""
    scratch_parent.mkdir(parents=True, exist_ok=True)
    key = os.stat(scratch_parent).st_dev
    with _PROBE_LOCK:
        if key in _PROBED:
            return _PROBED[key]
        _PROBED[key] = why = _probe(scratch_parent)
        return why


def _probe(scratch_parent: Path) -> str | None:
    if os.geteuid() != 0:
        return "the server is not root (mounting an overlay needs CAP_SYS_ADMIN)"
    if platform.machine() not in _SYSCALLS:
        return f"id-mapped mounts are not wired for {platform.machine()}"
    scratch_parent.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix=".overlay-probe-", dir=scratch_parent))
    layers = Layers(d / "sbx")
    try:
        tree = d / "base"
        tree.mkdir()
        (tree / "f").write_text("base\n")
        uid = 0x7FFE0000 + os.getpid() % 1000
        layers.create(tree, "probe", uid, b"")
        if os.stat(layers.repo / "f").st_uid != uid:
            return "the id-mapped lower layer did not map the base's owner"
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                os.chdir(layers.repo)  # as root: the scratch folder's parents may be closed to other uids
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                with open("f", "a") as f:
                    f.write("x\n")
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return "a sandbox uid could not write through the overlay"
        if (tree / "f").read_text() != "base\n":
            return "a write through the overlay reached the base"
        layers.reset(tree, uid)
        if (layers.repo / "f").read_text() != "base\n":
            return "a reset did not restore the base"
        return None
    except OSError as e:
        return f"overlay mounts are not allowed here ({e})"
    finally:
        with contextlib.suppress(OSError):
            layers.remove()
        for point in mounts_under(d):
            with contextlib.suppress(OSError):
                umount(point)
        shutil.rmtree(d, ignore_errors=True)

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
size); a reset unmounts the overlay, moves the upper and work folders aside, makes empty ones and
mounts again, so the working copy is exactly the base again and the work is what the episode
changed (the old upper layer is deleted after the new mount).

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
move_mount(2), user_namespaces(7).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import platform
import queue
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

_LIBC = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWUSER = 0x10000000
_SYSCALLS = {"x86_64": (428, 429, 442), "aarch64": (428, 429, 442)}
"""``open_tree``, ``move_mount``, ``mount_setattr`` (the same numbers on both: the unified table)."""
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
        """Return the working copy to the base: detach the overlay, swap in empty upper and work
        folders, mount again. The old overlay's teardown (the kernel's, which waits for RCU grace
        periods: milliseconds) and the deletion of the old layers (in proportion to what the
        episode changed) happen on a background thread: an ``O_PATH`` descriptor of the old
        mount's root is held across the detach, so the last reference drops there, not here."""
        with self.locked():
            held = -1
            if is_mount(self.repo):
                held = os.open(self.repo, os.O_PATH | os.O_CLOEXEC)
            try:
                umount(self.repo)
                trash = self.ovl / f"trash-{uuid.uuid4().hex[:8]}"
                trash.mkdir()
                for d in (self.upper, self.work):
                    if d.exists():
                        os.rename(d, trash / d.name)
                self._fresh_upper(uid)
                self.repo.mkdir(exist_ok=True)
                self._mount(tree, uid)
            except BaseException:
                if held >= 0:
                    os.close(held)
                raise
        _REAPER.submit(held, trash)

    def remove(self) -> None:
        """Unmount both mounts and remove the layers and the mount point (finish, expiry); the
        layers' files are deleted on the background thread."""
        with self.locked():
            for point in (self.repo, self.lower):
                while umount(point):  # everything stacked there
                    pass
            if self.ovl.exists():
                trash = self.root / f"trash-ovl-{uuid.uuid4().hex[:8]}"
                os.rename(self.ovl, trash)
                discard_later(trash)
            with contextlib.suppress(OSError):
                self.repo.rmdir()

    def unmount(self) -> None:
        """Unmount both mounts, keeping the layers (a server closing: the episode's state stays on
        disk and :meth:`ensure` mounts it again on the next call)."""
        with self.locked():
            for point in (self.repo, self.lower):
                while umount(point):
                    pass


class _Reaper:
    """One daemon thread that closes detached overlays' last descriptors and deletes old layers."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[int, Path]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    def submit(self, fd: int, trash: Path) -> None:
        with self._lock:
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ars-overlay-reaper", daemon=True)
                self._thread.start()
        self._queue.put((fd, trash))

    def _run(self) -> None:
        while True:
            fd, trash = self._queue.get()
            try:
                if fd >= 0:
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


_REAPER = _Reaper()


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

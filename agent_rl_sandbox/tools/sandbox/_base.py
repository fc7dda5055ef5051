"""The base of a task's sandboxes, built once per fixture content and kept under ``<home>/bases/``.

A new sandbox used to copy the fixture, ``git add`` every file, commit and repack it (most of its
time, in proportion to the fixture's size). :class:`BaseCache` does that once per fixture content:
``<home>/bases/<key>/`` holds

- ``tree/``: the fixture's files with tool caches left out, owned by the server's user, folders
  0755, files 0644 or 0755 (what every working copy starts as); never written after it is built
  (the overlay's read-only lower layer, :mod:`._overlay`, or the source of a copy);
- ``git/``: a git dir whose base commit is that tree, packed, with an index staged from ``tree/``
  (a new sandbox copies it: a few files);
- ``meta.json``: the base commit and tree hash, the tracked files, the secret files
  (:func:`._secret_watch.is_secret_name`) and where each index entry's owner fields lie.

``key`` is the SHA-256 of the fixture's content (every entry's relative path, kind, executable
bit, link target and bytes, tool caches left out), so an edited fixture gets a new base, and the
same fixture gives the same base commit as a fresh ``git init`` of it did (fixed author and
dates). The key is recomputed when the fixture may have changed: an inotify watch on each of its
folders (set before hashing) reports any change under it; where inotify is unavailable every
:meth:`BaseCache.get` hashes the fixture again. ``bases/`` is root's (mode 0700): no sandbox uid
reaches it. A base is built in a scratch folder and renamed into place, so servers sharing a home
never see half of one.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import stat
import struct
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from agent_rl_sandbox.tools.sandbox._git import WorkingCopy
from agent_rl_sandbox.tools.sandbox._secret_watch import is_secret_name

FORMAT = 1
"""Bumped when what a base holds changes (old bases are then rebuilt under new keys)."""
_IGNORED_FILES = (".pyc",)
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_WATCH_MASK = (
    0x00000002  # IN_MODIFY
    | 0x00000004  # IN_ATTRIB
    | 0x00000008  # IN_CLOSE_WRITE
    | 0x00000040  # IN_MOVED_FROM
    | 0x00000080  # IN_MOVED_TO
    | 0x00000100  # IN_CREATE
    | 0x00000200  # IN_DELETE
    | 0x00000400  # IN_DELETE_SELF
    | 0x00000800  # IN_MOVE_SELF
)
_IN_DONT_FOLLOW = 0x02000000
_WORKTREE_MARK = "@ARS_WORK_TREE@"
"""``core.worktree`` of a base's git dir: replaced by the sandbox's working copy when installed."""


def _load_libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_libc()


def _skipped(name: str, is_dir: bool) -> bool:
    """Tool caches (never copied into a working copy: ``shutil.ignore_patterns`` of the copy)."""
    return (is_dir and name in ("__pycache__", ".pytest_cache")) or (not is_dir and name.endswith(_IGNORED_FILES))


def content_key(fixture: Path) -> str:
    """SHA-256 (hex) of the fixture's content as a working copy would hold it: sorted relative
    paths, each entry's kind, executable bit, link target or bytes; tool caches left out. The
    folder's own name is part of it (the base commit's message names it)."""
    h = hashlib.sha256(f"ars-base-{FORMAT}\0{fixture.name}\0".encode())
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        top = fixture / rel_dir if rel_dir else fixture
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
        subdirs = []
        for e in entries:
            st = e.stat(follow_symlinks=False)
            is_dir = stat.S_ISDIR(st.st_mode)
            if _skipped(e.name, is_dir):
                continue
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            name = os.fsencode(rel)
            if is_dir:
                h.update(b"d\0" + name + b"\0")
                subdirs.append(rel)
            elif stat.S_ISLNK(st.st_mode):
                h.update(b"l\0" + name + b"\0" + os.fsencode(os.readlink(e.path)) + b"\0")
            elif stat.S_ISREG(st.st_mode):
                h.update(b"x\0" if st.st_mode & 0o100 else b"f\0")
                h.update(name + b"\0" + str(st.st_size).encode() + b"\0")
                with open(e.path, "rb") as f:
                    while chunk := f.read(1 << 20):
                        h.update(chunk)
            else:
                h.update(b"o\0" + name + b"\0")
        stack.extend(reversed(subdirs))
    return h.hexdigest()


class _Watch:
    """inotify watches on every folder of a fixture: :meth:`changed` says whether anything under
    it changed since the watches were set (or the queue overflowed, or a watch could not be set)."""

    def __init__(self, fixture: Path):
        self.fd = -1
        if _LIBC is None:
            return
        fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return
        stack = [str(fixture)]
        while stack:
            d = stack.pop()
            if _LIBC.inotify_add_watch(fd, os.fsencode(d), _WATCH_MASK | _IN_DONT_FOLLOW) < 0:
                os.close(fd)
                return
            try:
                with os.scandir(d) as it:
                    stack.extend(e.path for e in it if e.is_dir(follow_symlinks=False))
            except OSError:
                os.close(fd)
                return
        self.fd = fd

    @property
    def works(self) -> bool:
        return self.fd >= 0

    def changed(self) -> bool:
        if self.fd < 0:
            return True
        try:
            return bool(os.read(self.fd, 4096))
        except BlockingIOError:
            return False
        except OSError:
            return True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_PIECES: dict[Path, tuple[bytes, list[bytes]]] = {}
"""Per base folder: its index and the pieces of it between owner fields (a built base never
changes)."""


@dataclass(frozen=True)
class Base:
    """One built base (see the module docstring)."""

    key: str
    dir: Path
    commit: str
    tree_hash: str
    files: tuple[str, ...]
    """Tracked paths, sorted (``git ls-files``)."""
    secrets: tuple[str, ...]
    """Relative paths of regular files with a credential file's name."""
    owner_offsets: tuple[int, ...]
    """Byte offsets of each index entry's uid field (its gid follows)."""

    @property
    def tree(self) -> Path:
        return self.dir / "tree"

    @property
    def git_dir(self) -> Path:
        return self.dir / "git"

    def index_for(self, uid: int | None) -> bytes:
        """The base index with each entry's owner set to ``uid`` (what ``stat`` shows in a working
        copy owned by it, so git's stat check holds and nothing is hashed again); the trailing
        checksum recomputed. ``None``: the index as staged (owner the server's user). One
        ``bytes.join`` of the index's pieces between the owner fields (kept per base)."""
        data, pieces = self._index_pieces()
        if uid is None:
            return data
        body = struct.pack(">II", uid, uid).join(pieces)
        return body + hashlib.sha1(body).digest()

    def _index_pieces(self) -> tuple[bytes, list[bytes]]:
        cached = _PIECES.get(self.dir)
        if cached is None:
            data = (self.git_dir / "index").read_bytes()
            body = data[:-20]
            pieces, at = [], 0
            for off in self.owner_offsets:
                pieces.append(body[at:off])
                at = off + 8
            pieces.append(body[at:])
            cached = _PIECES[self.dir] = (data, pieces)
        return cached

    def install_git(self, git_dir: Path, work_tree: Path, uid: int | None) -> bytes:
        """Make ``git_dir`` a copy of the base's git dir (the packed base commit) for the working
        copy ``work_tree`` (its ``core.worktree``, as ``git init`` there would have written), with
        the index for a working copy owned by ``uid``; returns that index's bytes."""
        shutil.copytree(self.git_dir, git_dir, symlinks=True, ignore=shutil.ignore_patterns("index", "config"))
        quoted = str(work_tree).replace("\\", "\\\\").replace('"', '\\"')
        config = (self.git_dir / "config").read_text().replace(_WORKTREE_MARK, f'"{quoted}"')
        (git_dir / "config").write_text(config)
        index = self.index_for(uid)
        (git_dir / "index").write_bytes(index)
        return index


def _owner_offsets(index: bytes) -> tuple[int, ...]:
    """Offsets of the uid field of every entry of a version 2 or 3 git index (see git's
    ``Documentation/gitformat-index.txt``). Raises ``ValueError`` for other versions."""
    if index[:4] != b"DIRC":
        raise ValueError("not a git index")
    version, count = struct.unpack_from(">II", index, 4)
    if version not in (2, 3):
        raise ValueError(f"index version {version} is not handled")
    offsets = []
    off = 12
    for _ in range(count):
        offsets.append(off + 28)
        flags = struct.unpack_from(">H", index, off + 60)[0]
        fixed = 62 + (2 if version == 3 and flags & 0x4000 else 0)
        name_end = index.index(b"\0", off + fixed)
        length = name_end - off  # fixed part + name, then 1-8 NULs to a multiple of 8
        off += (length + 8) & ~7
    return tuple(offsets)


class BaseCache:
    """Bases under ``root`` (``<home>/bases``), one per fixture content. Thread-safe."""

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()
        self._known: dict[Path, tuple[_Watch, Base]] = {}
        self._loaded: dict[str, Base] = {}

    def get(self, fixture: Path) -> Base:
        """The base of ``fixture`` as it is now, built if this content has none yet."""
        with self._lock:
            known = self._known.get(fixture)
            if known is not None and not known[0].changed():
                return known[1]
            if known is not None:
                known[0].close()
                del self._known[fixture]
            while True:
                watch = _Watch(fixture)
                key = content_key(fixture)
                base = self._load(key) or self._build(fixture, key)
                if not watch.works:
                    watch.close()
                    return base
                if not watch.changed():
                    self._known[fixture] = (watch, base)
                    return base
                watch.close()  # edited while it was hashed or built: again

    def close(self) -> None:
        with self._lock:
            for watch, _ in self._known.values():
                watch.close()
            self._known.clear()

    def by_key(self, key: str) -> Base | None:
        """A base built earlier, by its key (a sandbox's overlay names the one it was made from)."""
        return self._load(key)

    def _load(self, key: str) -> Base | None:
        known = self._loaded.get(key)
        if known is not None and known.dir.is_dir():  # a built base never changes; it may be deleted
            return known
        d = self.root / key
        try:
            meta = json.loads((d / "meta.json").read_text())
        except (OSError, ValueError):
            return None
        self._loaded[key] = base = Base(
            key=key,
            dir=d,
            commit=meta["commit"],
            tree_hash=meta["tree_hash"],
            files=tuple(meta["files"]),
            secrets=tuple(meta["secrets"]),
            owner_offsets=tuple(meta["owner_offsets"]),
        )
        return base

    def _build(self, fixture: Path, key: str) -> Base:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        tmp = self.root / f".build-{uuid.uuid4().hex}"
        try:
            tree = tmp / "tree"
            shutil.copytree(
                fixture, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
            )
            secrets = []
            stack = [tree]
            while stack:  # plain modes, the server's owner (what a fresh working copy carries)
                d = stack.pop()
                os.chmod(d, 0o755)
                with os.scandir(d) as it:
                    for e in it:
                        st = e.stat(follow_symlinks=False)
                        if stat.S_ISDIR(st.st_mode):
                            stack.append(Path(e.path))
                        elif not stat.S_ISLNK(st.st_mode):
                            want = 0o755 if st.st_mode & 0o100 else 0o644
                            if stat.S_IMODE(st.st_mode) != want:
                                os.chmod(e.path, want)
                            if stat.S_ISREG(st.st_mode) and is_secret_name(e.name):
                                secrets.append(os.path.relpath(e.path, tree))
            wc = WorkingCopy(tmp / "git", tree)
            commit = wc.init_from(fixture)
            wc.git("config", "core.worktree", _WORKTREE_MARK)  # each sandbox's copy names its own
            tree_hash = wc.base_tree(commit)
            files = sorted(p for p in wc.git("ls-files", "-z").decode("utf-8", "surrogateescape").split("\0") if p)
            offsets = _owner_offsets((tmp / "git" / "index").read_bytes())
            meta = {
                "commit": commit,
                "tree_hash": tree_hash,
                "files": files,
                "secrets": sorted(secrets),
                "owner_offsets": list(offsets),
                "fixture": str(fixture),
            }
            (tmp / "meta.json").write_text(json.dumps(meta))
            try:
                os.rename(tmp, self.root / key)
            except OSError:  # another process built it meanwhile
                if self._load(key) is None:
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        base = self._load(key)
        assert base is not None
        return base

"""The recorded final tree as the verifier sees it: read from git objects, never through git's
attribute machinery.

``git archive`` honours ``.gitattributes`` inside the tree (``export-ignore`` drops files,
``export-subst`` rewrites them) and checkouts run filters, so a tree the agent wrote could decide
what the verifier sees. :class:`TreeView` lists the tree with one ``git ls-tree -r -z`` and reads
blobs with one ``git cat-file --batch`` (raw object bytes: no attribute, filter, ``eol`` or
``ident`` conversion exists on that path), with ``core.attributesFile=/dev/null`` and no system
config besides. :meth:`TreeView.export` writes exactly those bytes into a fresh folder through
directory descriptors (``O_NOFOLLOW``, ``O_EXCL``), so an entry can never be written through a link.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from agent_rl_sandbox.tools.sandbox._git import FIXED_ENV, GitError

REGULAR = {"100644": 0o644, "100755": 0o755}
SYMLINK = "120000"
GITLINK = "160000"
_NO_ATTRS = ("-c", "core.attributesFile=/dev/null", "-c", "core.autocrlf=false")


class TreeView:
    """Every entry of one git tree: ``path -> (mode, object id)``.

    ``git_dir``: the sandbox's git dir (the server's, outside anything a command can write);
    ``tree``: a tree hash recorded by the server. Raises :class:`GitError` when git fails."""

    def __init__(self, git_dir: Path, tree: str):
        self.git_dir = git_dir
        self.tree = tree
        out = self._git("ls-tree", "-r", "-z", "--full-tree", tree)
        self.entries: dict[str, tuple[str, str]] = {}
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            mode, _kind, oid = meta.decode().split(" ")
            self.entries[path.decode("utf-8", "surrogateescape")] = (mode, oid)
        self._blobs: dict[str, bytes] = {}

    def _git(self, *args: str, input: bytes | None = None) -> bytes:
        env = {**FIXED_ENV, "GIT_DIR": str(self.git_dir), "GIT_ATTR_NOSYSTEM": "1"}
        p = subprocess.run(["git", *_NO_ATTRS, *args], env=env, cwd=self.git_dir, capture_output=True, input=input)
        if p.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])} failed: {p.stderr.decode(errors='replace').strip()[:500]}")
        return p.stdout

    def _load(self, oids: list[str]) -> None:
        """Read the blobs ``oids`` (not yet cached) with one ``cat-file --batch``."""
        todo = [o for o in dict.fromkeys(oids) if o not in self._blobs]
        if not todo:
            return
        out = self._git("cat-file", "--batch", input="".join(f"{o}\n" for o in todo).encode())
        pos = 0
        for oid in todo:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].split(b" ")
            if len(header) != 3 or header[0].decode() != oid or header[1] != b"blob":
                raise GitError(f"git cat-file --batch: unexpected header {out[pos:nl][:200]!r} for {oid}")
            size = int(header[2])
            self._blobs[oid] = out[nl + 1 : nl + 1 + size]
            pos = nl + 1 + size + 1

    def is_file(self, path: str) -> bool:
        """Whether ``path`` is a regular file (not a symlink, folder or submodule) in the tree."""
        entry = self.entries.get(path)
        return entry is not None and entry[0] in REGULAR

    def exists(self, path: str) -> bool:
        """Whether ``path`` names an entry (any kind) or a folder of the tree."""
        p = path.rstrip("/")
        return p in self.entries or any(e.startswith(p + "/") for e in self.entries)

    def read(self, path: str) -> bytes | None:
        """Bytes of the regular file ``path``, ``None`` when it is absent or not a regular file."""
        if not self.is_file(path):
            return None
        oid = self.entries[path][1]
        self._load([oid])
        return self._blobs[oid]

    def export(self, dest: Path) -> int:
        """Write every entry into the empty folder ``dest`` (created; folders 0755, files 0644 or
        0755, symlinks recreated as links, submodules as empty folders); returns the file count.
        Entries whose path is absolute or has ``..`` or ``.git`` components are skipped."""
        self._load([oid for mode, oid in self.entries.values() if mode in REGULAR or mode == SYMLINK])
        os.mkdir(dest, 0o755)
        root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        dirs: dict[tuple[str, ...], int] = {(): root}
        count = 0
        try:
            for path, (mode, oid) in sorted(self.entries.items()):
                parts = PurePosixPath(path).parts
                if not parts or PurePosixPath(path).is_absolute() or any(p in ("..", ".", ".git") for p in parts):
                    continue
                parent = self._dir(dirs, parts[:-1])
                name = parts[-1]
                if mode in REGULAR:
                    fd = os.open(
                        name,
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                        REGULAR[mode],
                        dir_fd=parent,
                    )
                    try:
                        data = memoryview(self._blobs[oid])
                        while data:
                            data = data[os.write(fd, data) :]
                        os.fchmod(fd, REGULAR[mode])
                    finally:
                        os.close(fd)
                    count += 1
                elif mode == SYMLINK:
                    os.symlink(self._blobs[oid], name, dir_fd=parent)
                elif mode == GITLINK:
                    self._dir(dirs, parts)
        finally:
            for fd in dirs.values():
                os.close(fd)
        return count

    @staticmethod
    def _dir(dirs: dict[tuple[str, ...], int], parts: tuple[str, ...]) -> int:
        """The descriptor of folder ``parts`` under the export root, made (0755) where missing."""
        for i in range(1, len(parts) + 1):
            key = parts[:i]
            if key in dirs:
                continue
            parent = dirs[key[:-1]]
            try:
                os.mkdir(key[-1], 0o755, dir_fd=parent)
            except FileExistsError:
                pass
            dirs[key] = os.open(key[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            os.fchmod(dirs[key], 0o755)
        return dirs[parts]

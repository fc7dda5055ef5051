"""Reading files that sit in a folder a sandbox can write, without trusting anything about them.

The server runs as root and the agent controls every name inside its sandbox, so a plain
``open(root / rel)`` can be steered anywhere: a component swapped for a symlink between a check and
the open (``logs -> /etc``), a final symlink (``report.json -> /etc/shadow``), a FIFO that blocks
the reader forever, ``/dev/zero`` or a growing file that never ends. Here every component is opened
relative to the previous one's file descriptor with ``O_NOFOLLOW`` (folders also ``O_DIRECTORY``),
so no symlink is followed anywhere, whatever changes while the walk runs; the final open is
``O_NONBLOCK`` (a FIFO never blocks the open), and the opened object must be a regular file (checked
on the descriptor, so a swap after the check reads nothing else). Reads are capped in bytes and
checked against a deadline between chunks: for a regular file a ``read`` cannot block indefinitely
on a local file system, and everything that could (FIFOs, sockets, devices) is refused before the
first read.

Errors are :class:`UnsafeRead` (a ``ValueError``) whose message names the path and the problem.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
CHUNK = 1 << 16


class UnsafeRead(ValueError):
    """A sandbox file could not be read safely; the message names the path and why."""


def _parts(rel: str) -> list[str]:
    if not rel or "\0" in rel:
        raise UnsafeRead(f"{rel!r}: empty path or NUL byte")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts:
        raise UnsafeRead(f"{rel}: must be a relative path without `..`")
    parts = [p for p in pure.parts if p != "."]
    if not parts:
        raise UnsafeRead(f"{rel}: is a folder (the sandbox root), not a regular file; refused")
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


@contextmanager
def open_beneath(root: Path, rel: str, *, allow_hardlinks: bool = False) -> Iterator[int]:
    """Yield a read-only descriptor of the regular file ``rel`` under ``root``, never following a
    symlink at any component (``root`` itself is trusted: it is the server's own path).

    Raises :class:`UnsafeRead` naming the problem: a symlink (final or in between), a missing file,
    a folder, FIFO, socket or device, or (unless ``allow_hardlinks``) a file with other hard links
    (it may be a file outside the sandbox linked in)."""
    parts = _parts(rel)
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(root, _DIR_FLAGS))
        except OSError as e:
            raise UnsafeRead(f"{root}: cannot open the sandbox folder: {e.strerror}") from None
        for i, name in enumerate(parts[:-1]):
            try:
                fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
            except OSError as e:
                at = "/".join(parts[: i + 1])
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeRead(
                        f"{rel}: {at} is a symlink or not a folder; refused (links are never followed)"
                    ) from None
                raise UnsafeRead(f"{rel}: cannot open {at}: {e.strerror}") from None
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fds[-1])
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UnsafeRead(f"{rel}: is a symlink; refused (links are never followed)") from None
            if e.errno == errno.ENOENT:
                raise UnsafeRead(f"{rel}: no such file") from None
            raise UnsafeRead(f"{rel}: cannot open: {e.strerror}") from None
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeRead(f"{rel}: is {_kind(st.st_mode)}, not a regular file; refused")
        if st.st_nlink > 1 and not allow_hardlinks:
            raise UnsafeRead(
                f"{rel}: has {st.st_nlink} hard links (it may be a file from outside the sandbox); refused"
            )
        yield fd
    finally:
        for f in fds:
            os.close(f)


def read_fd(fd: int, *, max_bytes: int, timeout_s: float, name: str, offset: int = 0, truncate: bool = False) -> bytes:
    """Read from ``fd`` (a regular file) starting at ``offset``: at most ``max_bytes``.

    ``truncate``: return the first ``max_bytes`` when there is more; otherwise more than
    ``max_bytes`` raises :class:`UnsafeRead`. Past ``timeout_s`` raises too."""
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    got = 0
    pos = offset
    while True:
        if time.monotonic() > deadline:
            raise UnsafeRead(f"{name}: reading took longer than {timeout_s:g} s; refused")
        want = min(CHUNK, max_bytes + 1 - got)
        if want <= 0:
            break
        data = os.pread(fd, want, pos)
        if not data:
            break
        chunks.append(data)
        got += len(data)
        pos += len(data)
    out = b"".join(chunks)
    if len(out) > max_bytes:
        if not truncate:
            raise UnsafeRead(f"{name}: is over the {max_bytes}-byte limit; refused")
        out = out[:max_bytes]
    return out


def read_beneath(root: Path, rel: str, *, max_bytes: int = 8 << 20, timeout_s: float = 5.0) -> bytes:
    """The whole content of the regular file ``rel`` under ``root`` (see :func:`open_beneath`),
    at most ``max_bytes`` and within ``timeout_s``. Raises :class:`UnsafeRead` naming the problem."""
    with open_beneath(root, rel) as fd:
        return read_fd(fd, max_bytes=max_bytes, timeout_s=timeout_s, name=rel)


def split_text(data: bytes, *, at_eof: bool) -> tuple[bytes, bool]:
    """``(data, binary)`` for a chunk read from a file: ``binary`` when it holds a NUL byte or is
    not UTF-8 (the caller returns it base64-encoded instead of mojibake). A text chunk cut in the
    middle of a character (``at_eof`` false: more of the file follows) loses the partial character,
    so the next read (``offset + len(data)``) starts on a character boundary."""
    if b"\0" in data:
        return data, True
    try:
        data.decode("utf-8")
        return data, False
    except UnicodeDecodeError as e:
        if not at_eof and e.reason == "unexpected end of data" and 0 < e.start >= len(data) - 3:
            return data[: e.start], False
        return data, True

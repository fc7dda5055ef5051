"""Opening a dataset file for an agent-facing read without following any symbolic link.

``dataset_validate`` reads files under a few allowed folders, which an agent may be able to change
(the working folder of the client it runs in). Checking a resolved path and then opening it by name
is a race: between the check and the open a folder on the path can be swapped for a symlink to
``/etc`` and the server reads ``/etc/shadow``. :func:`open_no_follow` removes the race: it opens
``/`` and then every component of the (already resolved, absolute) path relative to the previous
component's descriptor with ``O_NOFOLLOW`` (folders also ``O_DIRECTORY``), so a symlink anywhere on
the path, present before or swapped in during the walk, makes the open fail instead of being
followed; the final open is ``O_NONBLOCK`` (a FIFO cannot block it) and the descriptor must be a
regular file (``fstat`` on the descriptor, so nothing swapped in afterwards is read). The data is then
read from that descriptor only.

Hard links are not refused: with the kernel's ``protected_hardlinks`` (the default on every current
distribution) nobody can link a file they could not read and write themselves.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def _refused(path: Path, why: str, code: int = errno.ELOOP) -> OSError:
    return OSError(code, f"{why}; refused (links are never followed here)", str(path))


def open_no_follow(path: Path, *, buffering: int = 1 << 20) -> BinaryIO:
    """A binary reader of the regular file at the absolute, link-free ``path``.

    Raises ``OSError`` whose ``strerror`` names the problem: a relative path or one with ``.``/``..``
    parts, a symbolic link (or something that is not a folder) at any component, a missing or
    unreadable file, or a final object that is a folder, FIFO, socket or device."""
    if not path.is_absolute() or any(p in (".", "..") for p in path.parts):
        raise _refused(path, "not an absolute path without . or .. parts", errno.EINVAL)
    parts = path.parts[1:]
    if not parts:
        raise _refused(path, "names a folder, not a file", errno.EISDIR)
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(path, f"component {name!r} is a symbolic link or not a folder") from None
                raise
            os.close(fd)
            fd = nfd
        try:
            ffd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _refused(path, "the file is a symbolic link") from None
            raise
    finally:
        os.close(fd)
    st = os.fstat(ffd)
    if not stat.S_ISREG(st.st_mode):
        os.close(ffd)
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO, socket or device"
        raise _refused(
            path, f"is {kind}, not a regular file", errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL
        )
    os.set_blocking(ffd, True)
    return os.fdopen(ffd, "rb", buffering=buffering)

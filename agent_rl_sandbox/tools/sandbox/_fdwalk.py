"""One walk of a folder by descriptors, shared by the quota (:func:`._usage.scan_tree`) and the
secret-file watch (:class:`._secret_watch.SecretWatch`, :func:`._secret_watch.note_secrets`).

Each folder is opened relative to its parent's descriptor (``openat`` with ``O_NOFOLLOW``), so no
path length hides anything: a folder chain deeper than ``PATH_MAX`` (4096 bytes) is walked like
any other (red team, sessions 3 and 4), and links are never followed. Descriptors held at once: at
most the depth of the folder being listed (a folder's descriptor is closed once the last of its
subfolders still to walk is opened).

Sources: openat(2), fdopendir(3) (``os.scandir`` of a descriptor), Linux man-pages 6.x.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a folder of the walk is opened: never through a link."""


class _Dir:
    """An open folder descriptor, closed once the last of its subfolders still to walk is opened."""

    __slots__ = ("fd", "pending")

    def __init__(self, fd: int):
        self.fd = fd
        self.pending = 0


def walk_fd(
    top: int,
    problem: Callable[[str], None] | None = None,
    descend: Callable[[str], bool] | None = None,
) -> Generator[tuple[str, os.DirEntry[str], int], None, None]:
    """``(relative path, directory entry, descriptor of its folder)`` of every entry below the
    folder open as ``top`` (a descriptor from :func:`open_folder`; the walk owns it and closes it
    once it has ended or been closed, so iterate it at once), folders too, each before what it holds. Folders are walked into (symlinks never), except
    those whose name ``descend`` refuses; the entry's type comes from the directory entry (no
    ``stat`` where the filesystem gives it). The descriptor is valid until the next item is asked
    for: name an entry by it (``/proc/self/fd/<fd>/<name>``, ``dir_fd=``) to reach it at any depth.

    Entries vanishing mid-walk are skipped. Any other failure to open or list a folder, or to type
    an entry, is passed to ``problem`` as a sentence (``"<path>: cannot open|list|stat (<reason>)"``,
    the path cut to 120 characters, ``.`` for the top) and that folder or entry is passed over: the
    caller decides whether that is fatal. Closing the generator early (``break``, ``return``,
    ``close()``) closes every descriptor it still holds."""
    held: set[_Dir] = set()
    stack: list[tuple[_Dir | None, str, str]] = [(None, "", "")]  # (parent, name, relative path)

    def note(rel: str, what: str, e: OSError) -> None:
        if problem is not None:
            problem(f"{rel[:120] or '.'}: cannot {what} ({e.strerror})")

    def drop(d: _Dir) -> None:
        held.discard(d)
        os.close(d.fd)

    root = _Dir(top)
    held.add(root)
    try:
        while stack:
            parent, name, rel_dir = stack.pop()
            if parent is None:
                here = root
            else:
                try:
                    fd = os.open(name, DIR_FLAGS, dir_fd=parent.fd)
                except FileNotFoundError:
                    fd = -1
                except OSError as e:
                    fd = -1
                    note(rel_dir, "open", e)
                parent.pending -= 1
                if parent.pending <= 0:
                    drop(parent)
                if fd < 0:
                    continue
                here = _Dir(fd)
                held.add(here)
            try:
                with os.scandir(here.fd) as it:
                    entries = list(it)
            except FileNotFoundError:
                entries = []
            except OSError as e:
                entries = []
                note(rel_dir, "list", e)
            subdirs: list[tuple[str, str]] = []
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as err:
                    note(rel, "stat", err)
                    continue
                yield rel, entry, here.fd
                if is_dir and (descend is None or descend(entry.name)):
                    subdirs.append((entry.name, rel))
            here.pending = len(subdirs)
            if subdirs:
                stack.extend((here, n, r) for n, r in subdirs)
            else:
                drop(here)
    finally:
        for d in list(held):
            drop(d)


def open_folder(path: Path) -> int:
    """A descriptor of the folder ``path`` for :func:`walk_fd` (:data:`DIR_FLAGS`: not through a
    link). Raises ``OSError`` (``FileNotFoundError`` when it is missing)."""
    return os.open(path, DIR_FLAGS)

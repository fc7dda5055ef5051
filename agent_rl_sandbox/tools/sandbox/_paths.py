"""Resolving agent-supplied paths so they cannot escape the sandbox.

Text checks alone are bypassed by symlinks, so after the text checks the real path of the target
(or, when it does not exist yet, of its deepest existing ancestor) must lie inside the sandbox's
real path. Refused: empty paths, absolute paths, ``..`` components, NUL bytes, symlinks (final or
ancestor, dangling or not) leading outside, and device files, FIFOs and sockets; for writes also
any ``.git`` component (in any case), which git cannot store.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath


class PathRefused(ValueError):
    """The path would escape the sandbox or names something that is not a file or folder."""


def resolve_inside(root: Path, path: str, *, for_write: bool) -> Path:
    """Return the real path of ``path`` relative to ``root``, refusing escapes.

    ``for_write``: the target may not exist yet (its deepest existing ancestor is checked) and a
    final-component symlink is refused even if it points inside (writes use ``O_NOFOLLOW``).
    Raises :class:`PathRefused` with a reason naming the path.
    """
    if not path or not path.strip():
        raise PathRefused("empty path")
    if "\0" in path:
        raise PathRefused(f"{path!r}: NUL byte in path")
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        raise PathRefused(f"{path}: absolute paths are refused; use a path relative to the repo root")
    if ".." in pure.parts:
        raise PathRefused(f"{path}: `..` is refused; paths must stay inside the sandbox")
    if for_write and any(part.lower() == ".git" for part in pure.parts):
        raise PathRefused(f"{path}: `.git` entries are not allowed in the sandbox (git cannot record them)")
    real_root = root.resolve()
    candidate = real_root.joinpath(*pure.parts) if pure.parts else real_root
    # Deepest existing ancestor (lexists: a dangling symlink exists as a link).
    probe = candidate
    while not os.path.lexists(probe) and probe != real_root:
        probe = probe.parent
    real_probe = Path(os.path.realpath(probe))
    if real_probe != real_root and not real_probe.is_relative_to(real_root):
        raise PathRefused(f"{path}: resolves outside the sandbox (through a symlink at {probe.relative_to(real_root)})")
    if os.path.lexists(candidate):
        if candidate.is_symlink():
            target = Path(os.path.realpath(candidate))
            if for_write or not target.is_relative_to(real_root):
                raise PathRefused(
                    f"{path}: is a symlink{' pointing outside the sandbox' if not target.is_relative_to(real_root) else ''}; refused"
                )
        real = Path(os.path.realpath(candidate))
        if not real.is_relative_to(real_root):
            raise PathRefused(f"{path}: resolves outside the sandbox")
        mode = os.stat(real).st_mode if os.path.exists(real) else 0
        if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise PathRefused(f"{path}: is a device, FIFO or socket; refused")
        return real
    return Path(os.path.realpath(candidate.parent)) / candidate.name

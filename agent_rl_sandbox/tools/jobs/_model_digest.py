"""A content digest of a local base-model folder, bound into a job's spec hash.

A human approves a job spec by its hash; when ``base_model`` is a folder, the hash must also pin
what is in that folder, or the weights (or the tokenizer, or a ``config.json`` naming remote code)
could be swapped between the approval and the training. :func:`model_digest` hashes the folder's
regular files, recursively, in sorted order of their relative paths: for each, the path, the size
and the SHA-256 of the content. A file over :data:`FULL_HASH_BYTES` (the shards of a real model:
hashing 15 GB would make ``training_request`` take minutes) contributes its size and the SHA-256
of :data:`SAMPLES` blocks of :data:`SAMPLE_BYTES` at fixed, evenly spaced offsets (the first and
the last block included), so truncation, appending, a different shard or a re-saved checkpoint all
change the digest; an edit confined to the unsampled bytes of a large shard does not. Symbolic links
are not followed (a link's target path is hashed instead), and a folder over :data:`MAX_FILES`
files is refused.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

FULL_HASH_BYTES = 64 << 20
"""Files up to this size (64 MiB) are hashed whole."""
SAMPLES = 16
SAMPLE_BYTES = 1 << 20
MAX_FILES = 10_000


class ModelDigestError(ValueError):
    """The folder cannot be digested (unreadable, too many files); the message says which file."""


def model_digest(folder: Path) -> str:
    """``"sha256:<hex>"`` over the model folder's files (see the module docstring). Raises
    :class:`ModelDigestError` for an unreadable entry or more than :data:`MAX_FILES` files."""
    root = Path(folder)
    entries: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in (*filenames, *(d for d in dirnames if (Path(dirpath) / d).is_symlink())):
            p = Path(dirpath) / name
            entries.append((p.relative_to(root).as_posix(), p))
            if len(entries) > MAX_FILES:
                raise ModelDigestError(f"{root} holds more than {MAX_FILES} files; is it a model folder?")
    h = hashlib.sha256()
    for rel, p in sorted(entries):
        try:
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                part = f"link\0{os.readlink(p)}"
            elif stat.S_ISREG(st.st_mode):
                part = f"file\0{st.st_size}\0{_content_sha256(p, st.st_size)}"
            else:
                part = f"other\0{stat.S_IFMT(st.st_mode)}"
        except OSError as e:
            raise ModelDigestError(f"cannot read {p}: {e.strerror}") from None
        h.update(f"{rel}\0{part}\n".encode("utf-8", "surrogateescape"))
    return "sha256:" + h.hexdigest()


def _content_sha256(path: Path, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= FULL_HASH_BYTES:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        else:
            step = (size - SAMPLE_BYTES) // (SAMPLES - 1)
            for i in range(SAMPLES):
                f.seek(i * step)
                h.update(f.read(SAMPLE_BYTES))
    return h.hexdigest()

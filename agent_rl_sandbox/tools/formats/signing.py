"""Export signatures: how a file proves it came from this store (the trust rule of :mod:`.atif`).

Key: ``<home>/export.key``, 32 random bytes written as 64 hex digits and a newline, mode 0600, created on
the first export (:func:`export_key` with ``create=True``; concurrent first exports agree on one key) and
never exported, logged or shown. Its *key id* is the first 16 hex digits of SHA-256 over the key bytes.
Deleting the file revokes every earlier export (they then score as self-reported); scoring never
creates it. A key file readable by group or others is refused (an :class:`ActionError` saying to
``chmod 600`` it), since anyone who can read it can forge a verified export.

Scheme ``hmac-sha256/v1``::

    canonical = JSON of the document without its signature, keys sorted, separators (",", ":"),
                ASCII only (\\u escapes), NaN/Infinity refused
    mac       = HMAC-SHA256(key, b"agent-rl-sandbox export v1\\0" + kind + b"\\0" + canonical)
    signature = {"scheme": "hmac-sha256/v1", "kind": kind, "key_id": <16 hex>, "mac": <64 hex>}

``kind`` is ``atif`` (one trajectory document; the signature sits in its root ``extra.export_signature``,
so every line of an ATIF JSONL export verifies on its own) or ``suite`` (a whole Port Daddy suite; the
signature is its root ``exportSignature``). Because the kind is inside the MAC, a signature cannot be
moved from one kind of document to the other. Any change to any signed value (a reward, a provenance,
a step, a task's expectations) fails verification; re-indenting or re-ordering keys does not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent_rl_sandbox.tools.errors import ActionError

KEY_FILE = "export.key"
SCHEME = "hmac-sha256/v1"
_DOMAIN = b"agent-rl-sandbox export v1\0"
SignedKind = Literal["atif", "suite"]
Status = Literal["verified", "unsigned", "altered", "other_key", "no_key", "malformed"]
"""``verified``: the MAC matches this home's key; ``unsigned``: no signature; ``altered``: signed with this
home's key but the content changed since; ``other_key``: signed by another store (or a rotated key);
``no_key``: this home has no export key (it never exported); ``malformed``: the signature block or the
content cannot be checked (wrong shape, NaN)."""


@dataclass(frozen=True)
class Verification:
    """Whether a document proves it is an export of this store, and why not."""

    status: Status
    key_id: str | None = None
    """The key id the document names (``None`` when unsigned)."""

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def reason(self) -> str:
        """A sentence for reports: why the document's claims are (not) trusted."""
        return {
            "verified": "a verified export of this store",
            "unsigned": "not signed by this store",
            "altered": "its export signature does not match its content (the file was changed after export)",
            "other_key": f"signed with another store's export key ({self.key_id})",
            "no_key": "this home has no export key, so no file can prove it came from this store",
            "malformed": "its export signature cannot be checked (malformed signature or content)",
        }[self.status]


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


def export_key(home: Path, *, create: bool = False) -> bytes | None:
    """This home's export key; ``None`` when there is none and ``create`` is false.

    Raises :class:`ActionError` when the key file is unreadable, malformed or readable by others."""
    path = Path(home) / KEY_FILE
    if not path.exists() and create:
        _create(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ActionError(
            f"cannot read the export key {path}: {e.strerror or e}",
            f"make {path} a regular file readable by this user (mode 0600), or delete it to start a new key",
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ActionError(
                f"the export key {path} is not a regular file", f"delete {path}; the next export creates a new key"
            )
        if st.st_mode & 0o077:
            raise ActionError(
                f"the export key {path} is readable by other users (mode {stat.S_IMODE(st.st_mode):o})",
                f"run `chmod 600 {path}` (anyone who can read it can forge verified exports)",
            )
        text = os.read(fd, 1024).decode("ascii", errors="replace").strip()
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 32:
        raise ActionError(
            f"the export key {path} is not 64 hex digits", f"delete {path}; the next export creates a new key"
        )
    return key


def _create(path: Path) -> None:
    """Write a new key atomically; when another process created one first, keep theirs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if it exists: the first writer wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)


def _location(kind: SignedKind) -> tuple[str, ...]:
    return ("extra", "export_signature") if kind == "atif" else ("exportSignature",)


def _without_signature(doc: dict[str, Any], kind: SignedKind) -> tuple[dict[str, Any], Any]:
    loc = _location(kind)
    out = dict(doc)
    if len(loc) == 1:
        return out, out.pop(loc[0], None)
    inner = out.get(loc[0])
    if not isinstance(inner, dict):
        return out, None
    inner = dict(inner)
    sig = inner.pop(loc[1], None)
    if inner:
        out[loc[0]] = inner
    else:  # an ``extra`` that held only the signature: as if absent, on both sides
        del out[loc[0]]
    return out, sig


def canonical(doc: dict[str, Any], kind: SignedKind) -> bytes:
    """The bytes the MAC covers (see the module docstring). Raises ``ValueError`` on NaN/Infinity."""
    body, _ = _without_signature(doc, kind)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def _mac(key: bytes, kind: SignedKind, body: bytes) -> str:
    return hmac.new(key, _DOMAIN + kind.encode() + b"\0" + body, hashlib.sha256).hexdigest()


def sign(doc: dict[str, Any], key: bytes, kind: SignedKind) -> dict[str, Any]:
    """A copy of ``doc`` carrying its signature (any old one replaced). Raises ``ValueError`` when the
    document holds NaN or Infinity (not JSON)."""
    sig = {"scheme": SCHEME, "kind": kind, "key_id": key_id(key), "mac": _mac(key, kind, canonical(doc, kind))}
    out, _ = _without_signature(doc, kind)
    loc = _location(kind)
    if len(loc) == 1:
        out[loc[0]] = sig
    else:
        out[loc[0]] = {**(out.get(loc[0]) or {}), loc[1]: sig}
    return out


def verify(doc: Any, key: bytes | None, kind: SignedKind) -> Verification:
    """Check ``doc``'s signature against ``key`` (this home's export key, ``None`` if it has none)."""
    if not isinstance(doc, dict):
        return Verification("unsigned")
    _, sig = _without_signature(doc, kind)
    if sig is None:
        return Verification("unsigned")
    if (
        not isinstance(sig, dict)
        or sig.get("scheme") != SCHEME
        or sig.get("kind") != kind
        or not isinstance(sig.get("mac"), str)
    ):
        return Verification(
            "malformed", sig.get("key_id") if isinstance(sig, dict) and isinstance(sig.get("key_id"), str) else None
        )
    kid = sig.get("key_id") if isinstance(sig.get("key_id"), str) else None
    if key is None:
        return Verification("no_key", kid)
    if kid != key_id(key):
        return Verification("other_key", kid)
    try:
        body = canonical(doc, kind)
    except (ValueError, TypeError, RecursionError):
        return Verification("malformed", kid)
    if not hmac.compare_digest(_mac(key, kind, body), sig["mac"]):
        return Verification("altered", kid)
    return Verification("verified", kid)

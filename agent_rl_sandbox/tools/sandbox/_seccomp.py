"""A seccomp filter that keeps sandbox commands from creating user namespaces.

Inside a user namespace of its own a command could mount over the server-owned shims and the
effect socket (``mount -t tmpfs x /run/ars``) in a private mount namespace, so its calls of
``curl`` or a deploy tool would go unrecorded (the shims' binds cannot be removed to reveal the real
tools, and the network stays off, but the attempt would vanish). bubblewrap loads this filter
(``--seccomp FD``) just before it runs the command: ``unshare`` and ``clone`` with
``CLONE_NEWUSER`` fail with ``EPERM``, and ``clone3`` (whose flags live in memory a filter cannot
read) fails with ``ENOSYS``, so the C library falls back to ``clone``, as under Docker's default
profile. Other architectures than x86-64 and AArch64 are let through unfiltered (said so by
:func:`supported`).
"""

from __future__ import annotations

import platform
import struct

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
EPERM, ENOSYS = 1, 38
CLONE_NEWUSER = 0x10000000
_ARCHES = {  # AUDIT_ARCH_* -> (unshare, clone, clone3)
    0xC000003E: (272, 56, 435),  # x86-64
    0xC00000B7: (97, 220, 435),  # AArch64
}


def supported() -> bool:
    """Whether the filter covers this machine's architecture."""
    return platform.machine() in ("x86_64", "amd64", "aarch64", "arm64")


def _assemble(prog: list[tuple]) -> bytes:
    """``prog``: ``(label,)`` markers and ``(code, k, jt_label, jf_label)`` instructions; jump
    targets are labels (``None``: fall through)."""
    labels: dict[str, int] = {}
    pc = 0
    for item in prog:
        if len(item) == 1:
            labels[item[0]] = pc
        else:
            pc += 1
    out, pc = [], 0
    for item in prog:
        if len(item) == 1:
            continue
        code, k, jt, jf = item
        rel_t = 0 if jt is None else labels[jt] - (pc + 1)
        rel_f = 0 if jf is None else labels[jf] - (pc + 1)
        out.append(struct.pack("=HBBI", code, rel_t, rel_f, k))
        pc += 1
    return b"".join(out)


def no_userns_filter() -> bytes:
    """The compiled classic-BPF program (an array of ``struct sock_filter``) for ``bwrap --seccomp``."""
    prog: list[tuple] = [(_LD_W_ABS, 4, None, None)]  # seccomp_data.arch
    prog += [(_JEQ_K, arch, f"arch{i}", None) for i, arch in enumerate(_ARCHES)]
    prog.append((_RET_K, _ALLOW, None, None))  # an architecture the filter does not know
    for i, (unshare, clone, clone3) in enumerate(_ARCHES.values()):
        prog += [
            (f"arch{i}",),
            (_LD_W_ABS, 0, None, None),  # seccomp_data.nr
            (_JEQ_K, unshare, "flags", None),
            (_JEQ_K, clone, "flags", None),
            (_JEQ_K, clone3, "nosys", None),
            (_RET_K, _ALLOW, None, None),
        ]
    prog += [
        ("flags",),
        (_LD_W_ABS, 16, None, None),  # args[0], low 32 bits (little-endian)
        (_JSET_K, CLONE_NEWUSER, "eperm", None),
        (_RET_K, _ALLOW, None, None),
        ("eperm",),
        (_RET_K, _ERRNO | EPERM, None, None),
        ("nosys",),
        (_RET_K, _ERRNO | ENOSYS, None, None),
    ]
    return _assemble(prog)

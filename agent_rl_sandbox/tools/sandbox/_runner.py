"""Running one command inside a sandbox: isolation, resource limits, bounded output.

Isolation is bubblewrap when installed (read-only root, only the sandbox writable, tmpfs over
``/tmp``, home folders and task folders so hidden verifiers and host secrets are invisible, no
network, own PID/IPC/UTS namespaces, die with parent, cleared environment) and otherwise a plain
subprocess with the same limits and a cleared environment; :func:`detect_isolation` says which.

Limits (see :class:`~agent_rl_sandbox.schemas.task.Limits`): wall time (the whole process group
is killed), RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, and output bytes kept per stream
(the rest is read, counted and dropped; a stream past ``HARD_OUTPUT_CAP`` bytes kills the command).
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agent_rl_sandbox.schemas.task import Limits

HARD_OUTPUT_CAP = 256 * 1024 * 1024
"""Bytes one stream may produce before the command is killed with ``limit_hit="output"``."""

CUT_MARKER = "\n[... {cut} more bytes cut (output limit {limit} bytes) ...]\n"


@dataclass(frozen=True)
class Isolation:
    """Which isolation is in force. ``kind`` is ``bwrap`` or ``none``; ``detail`` is a sentence."""

    kind: str
    detail: str
    bwrap_path: str | None = None


def detect_isolation(mode: str = "auto") -> Isolation:
    """Pick the isolation for ``mode`` (``auto``, ``bwrap``, ``none``).

    ``auto`` uses bubblewrap when it is installed and works, else a plain subprocess. ``bwrap``
    raises ``RuntimeError`` if bubblewrap is unusable.
    """
    if mode == "none":
        return Isolation("none", "plain subprocess: cleared environment and resource limits, no filesystem or network isolation")
    path = shutil.which("bwrap")
    if path is not None:
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev", "--proc", "/proc", "true"],
            capture_output=True,
            timeout=20,
        )
        if probe.returncode == 0:
            return Isolation(
                "bwrap",
                "bubblewrap: read-only root, only the sandbox writable, no network, own PID namespace, cleared environment",
                path,
            )
        if mode == "bwrap":
            raise RuntimeError(f"bubblewrap is installed but does not work here: {probe.stderr.decode()[:300]}")
    elif mode == "bwrap":
        raise RuntimeError("bubblewrap (bwrap) is not installed; install the `bubblewrap` package")
    return Isolation("none", "plain subprocess (bubblewrap not available): cleared environment and resource limits, no filesystem or network isolation")


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command. Output fields hold at most ``Limits.output_bytes`` bytes each."""

    exit_code: int | None
    """Exit status; negative signal number when killed by a signal; ``None`` if it never started."""
    stdout: str
    stderr: str
    stdout_bytes: int
    """Total bytes the command wrote to stdout (kept or not)."""
    stderr_bytes: int
    duration_s: float
    limit_hit: str | None
    """``wall_time``, ``cpu_time``, ``memory``, ``file_size``, ``output``, ``processes`` or ``None``."""


def _base_env(home: Path, credentials: dict[str, str]) -> dict[str, str]:
    py_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{py_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
    }
    env.update(credentials)
    return env


def _preexec(limits: Limits):
    def apply() -> None:  # runs in the child between fork and exec
        os.setsid()
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        mem = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        fsize = limits.file_size_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


Mount = tuple[str, Path]
"""A bubblewrap mount, applied in order: ``("tmpfs", p)`` hides ``p`` behind an empty tmpfs,
``("ro", p)`` binds ``p`` read-only, ``("rw", p)`` binds ``p`` read-write. Later mounts win, so a
folder can be hidden and a sub-folder of it bound back."""


def python_mounts() -> list[Mount]:
    """Read-only binds that keep this interpreter usable when home folders are hidden (a venv's
    ``python`` is often a symlink into ``~/.pyenv`` or similar)."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent}
    return [("ro", p) for p in sorted(paths) if p.exists()]


def build_argv(isolation: Isolation, command: str, *, cwd: Path, mounts: list[Mount], env: dict[str, str]) -> list[str]:
    """The argv that runs ``command`` with ``bash -c`` under ``isolation``.

    Under bubblewrap: read-only root, fresh ``/dev``, ``/proc`` and ``/tmp``, then ``mounts`` in
    order, then new net/PID/IPC/UTS namespaces, a new session, die-with-parent and a cleared
    environment set to ``env``. Without bubblewrap the command runs as is (``mounts`` unused).
    """
    inner = ["/bin/bash", "--noprofile", "--norc", "-c", command]
    if isolation.kind != "bwrap":
        return inner
    argv = [isolation.bwrap_path or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    flag = {"tmpfs": "--tmpfs", "ro": "--ro-bind", "rw": "--bind"}
    for op, path in mounts:
        if op == "tmpfs":
            if path.exists():
                argv += ["--tmpfs", str(path)]
        else:
            argv += [flag[op], str(path), str(path)]
    argv += [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ]
    for k, v in env.items():
        argv += ["--setenv", k, v]
    argv += ["--chdir", str(cwd), "--", *inner]
    return argv


def _classify(exit_code: int, limits: Limits, cpu_used: float, stderr_tail: bytes) -> str | None:
    if exit_code == -signal.SIGXCPU or (exit_code == -signal.SIGKILL and cpu_used >= limits.cpu_seconds):
        return "cpu_time"
    if exit_code == -signal.SIGXFSZ or b"File too large" in stderr_tail:
        return "file_size"
    if b"MemoryError" in stderr_tail or b"Cannot allocate memory" in stderr_tail or b"memory exhausted" in stderr_tail:
        return "memory"
    if b"Resource temporarily unavailable" in stderr_tail and b"fork" in stderr_tail:
        return "processes"
    return None


def run_command(
    command: str,
    *,
    cwd: Path,
    limits: Limits,
    isolation: Isolation,
    credentials: dict[str, str] | None = None,
    extra_env: dict[str, str] | None = None,
    mounts: list[Mount] | None = None,
    wall_seconds: float | None = None,
) -> CommandResult:
    """Run ``command`` (``bash -c``) in ``cwd`` under ``isolation`` and ``limits``.

    ``mounts`` (bubblewrap only) default to binding ``cwd`` read-write. The parent's environment is never inherited: the command sees a fixed PATH, HOME=``cwd``, the
    task's fake ``credentials`` and ``extra_env``. Returns a :class:`CommandResult`; never raises
    for what the command does (a missing bash raises ``FileNotFoundError``).
    """
    limit_wall = wall_seconds if wall_seconds is not None else limits.wall_seconds
    env = _base_env(cwd, credentials or {})
    env.update(extra_env or {})
    argv = build_argv(isolation, command, cwd=cwd, mounts=mounts if mounts is not None else [("rw", cwd)], env=env)
    keep = limits.output_bytes
    bufs = {1: bytearray(), 2: bytearray()}
    totals = {1: 0, 2: 0}
    t0 = time.monotonic()
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_preexec(limits),
        close_fds=True,
    )
    limit_hit: str | None = None
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, 1)
    sel.register(proc.stderr, selectors.EVENT_READ, 2)
    open_streams = 2
    try:
        while open_streams:
            remaining = limit_wall - (time.monotonic() - t0)
            if remaining <= 0:
                limit_hit = "wall_time"
                break
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                fd = key.data
                totals[fd] += len(chunk)
                room = keep - len(bufs[fd])
                if room > 0:
                    bufs[fd] += chunk[:room]
                if totals[fd] > HARD_OUTPUT_CAP:
                    limit_hit = "output"
                    open_streams = 0
                    break
        if limit_hit is None:
            try:
                proc.wait(timeout=max(0.1, limit_wall - (time.monotonic() - t0)))
            except subprocess.TimeoutExpired:
                limit_hit = "wall_time"
    finally:
        if proc.poll() is None or limit_hit is not None:
            kill_group(proc.pid)
        proc.wait()
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
    duration = time.monotonic() - t0
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_used = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    exit_code = proc.returncode
    if limit_hit is None:
        limit_hit = _classify(exit_code, limits, cpu_used, bytes(bufs[2][-4096:]))

    def text(fd: int) -> str:
        s = bufs[fd].decode("utf-8", errors="replace")
        cut = totals[fd] - len(bufs[fd])
        return s + CUT_MARKER.format(cut=cut, limit=keep) if cut > 0 else s

    return CommandResult(
        exit_code=exit_code,
        stdout=text(1),
        stderr=text(2),
        stdout_bytes=totals[1],
        stderr_bytes=totals[2],
        duration_s=round(duration, 3),
        limit_hit=limit_hit,
    )


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (commands run in their own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

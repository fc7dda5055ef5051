"""Finding and killing every process of a job, including ones that tried to get away.

A stage runs in its own session and process group, but a process can leave the group (``setsid``),
ignore ``SIGTERM``, or double-fork so that its parent dies. Three nets catch them:

1. **Subreaper.** :func:`become_subreaper` sets ``PR_SET_CHILD_SUBREAPER`` on the worker
   (``prctl`` through ``ctypes``), so an orphaned descendant is reparented to the worker instead of
   to init and stays in the worker's process tree.
2. **Tree walk.** :func:`job_processes` reads ``/proc/<pid>/stat`` for every process and takes the
   worker's descendants that started at or after the stage started (``starttime``, clock ticks
   since boot), plus every member of the stage's process group.
3. **Environment marker.** every stage starts with ``AGENT_RL_SANDBOX_JOB_ID=<job id>`` in its
   environment; processes of the same user whose ``/proc/<pid>/environ`` carries it are taken too
   (this catches a process that left the tree some other way, e.g. started by a forked helper of
   another subreaper).

:func:`kill_job_processes` sends ``SIGTERM`` to all of them, waits ``grace_s``, then ``SIGKILL``s
whatever is left, rescanning until a scan finds nothing alive, and reaps the zombies that are the
worker's children. Linux only (``/proc`` and ``prctl``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from dataclasses import dataclass

JOB_ENV = "AGENT_RL_SANDBOX_JOB_ID"
"""The environment marker every stage process inherits."""

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper(on: bool = True) -> bool:
    """Make the calling process the subreaper of its descendants (``on=False`` undoes it). Returns
    ``False`` where ``prctl`` is unavailable (not Linux); the tree walk and the marker scan still
    run then."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class ProcInfo:
    """One line of ``/proc/<pid>/stat``: what the kill sweep needs."""

    pid: int
    ppid: int
    pgid: int
    state: str
    """``R``, ``S``, ``D``, ``Z`` (zombie), ..."""
    starttime: int
    """Clock ticks after boot at which the process started."""


def read_proc(pid: int) -> ProcInfo | None:
    """The process's stat line, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm may hold spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(")") + 2 :].split()
    try:
        return ProcInfo(pid=pid, state=rest[0], ppid=int(rest[1]), pgid=int(rest[2]), starttime=int(rest[19]))
    except (IndexError, ValueError):
        return None


def all_processes() -> dict[int, ProcInfo]:
    """Every visible process, by pid."""
    out: dict[int, ProcInfo] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = read_proc(int(name))
            if info is not None:
                out[info.pid] = info
    return out


def _marker(pid: int) -> bytes | None:
    """The value of the job marker in the process's start-up environment, or ``None``."""
    prefix = JOB_ENV.encode() + b"="
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return None
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix) :]
    return None


def job_processes(job_id: str, *, pgid: int | None, since: int, root: int | None = None) -> set[int]:
    """Pids of the job's processes that are not zombies: the worker's descendants started at or after
    ``since`` (clock ticks after boot), members of process group ``pgid``, descendants of ``root``,
    and processes whose environment carries ``AGENT_RL_SANDBOX_JOB_ID=job_id``. A child of the worker
    whose marker names another job is not taken, nor its descendants. Never the caller."""
    me = os.getpid()
    procs = all_processes()
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    ours = job_id.encode()
    found: set[int] = set()
    # The worker's children since the stage started, except ones that belong to another job.
    stack = [pid for pid in children.get(me, []) if procs[pid].starttime >= since and _marker(pid) in (None, ours)]
    if root is not None and root in procs:
        stack.append(root)
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        found.add(pid)
        stack.extend(children.get(pid, []))
    for p in procs.values():
        if (pgid is not None and p.pgid == pgid) or _marker(p.pid) == ours:
            found.add(p.pid)
    found.discard(me)
    return {pid for pid in found if pid in procs and procs[pid].state != "Z"}


def reap_zombies(pids: set[int] | None = None, *, keep: int | None = None) -> None:
    """``waitpid`` the worker's zombie children (only ``pids`` when given), so they vanish from /proc;
    ``keep`` is left for its ``Popen`` to reap (it would read a stolen status as exit 0)."""
    procs = all_processes()
    me = os.getpid()
    for p in procs.values():
        if p.ppid == me and p.state == "Z" and p.pid != keep and (pids is None or p.pid in pids):
            try:
                os.waitpid(p.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _signal_all(pids: set[int], pgid: int | None, sig: int) -> None:
    # killpg only while a member is alive: a group id whose members are all gone may be reused.
    if pgid is not None and any((info := read_proc(pid)) is not None and info.pgid == pgid for pid in pids):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_job_processes(
    job_id: str, *, pgid: int | None, since: int, root: int | None = None, grace_s: float = 5.0
) -> set[int]:
    """Stop every process of the job: ``SIGTERM``, up to ``grace_s`` seconds for them to exit, then
    ``SIGKILL`` and rescans until none is left (at most 100 rounds, about 5 s). Returns every pid that
    was signalled. Raises nothing for processes that are already gone."""
    seen: set[int] = set()
    pids = job_processes(job_id, pgid=pgid, since=since, root=root)
    seen |= pids
    if pids:
        _signal_all(pids, pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            reap_zombies(seen, keep=root)
            pids = job_processes(job_id, pgid=pgid, since=since, root=root)
            seen |= pids
            if not pids:
                break
            time.sleep(0.05)
    for _ in range(100):
        pids = job_processes(job_id, pgid=pgid, since=since, root=root)
        seen |= pids
        if not pids:
            break
        _signal_all(pids, pgid, signal.SIGKILL)
        time.sleep(0.05)
        reap_zombies(seen, keep=root)
    reap_zombies(seen, keep=root)
    return seen


def clock_ticks_now() -> int:
    """The current time in the unit of ``/proc/<pid>/stat``'s ``starttime`` (ticks after boot)."""
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return int(uptime * os.sysconf("SC_CLK_TCK"))

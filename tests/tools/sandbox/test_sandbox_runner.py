"""Limits on every command, in both isolations: bubblewrap and the plain-subprocess fallback.

Each test runs real commands through :func:`run_command` in a folder owned by a sandbox uid (when
the tests run as root), the way the sandbox service does.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from pathlib import Path

import pytest
from sandbox_helpers import (
    BACKGROUND,
    HAS_BWRAP,
    IN_CI,
    IS_ROOT,
    crash_a_server_mid_run,
    peak_processes,
    requires_root,
)

from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.tools.sandbox import detect_isolation, run_command
from agent_rl_sandbox.tools.sandbox._runner import (
    CUT_MARKER,
    Isolation,
    LiveProcesses,
    UidLedger,
    describe_isolation,
    kill_uid,
    pids_of_uid,
    sandbox_uid,
)

ISOLATIONS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(not HAS_BWRAP and not IN_CI, reason="bubblewrap not installed")),
    "none",
]


@pytest.fixture(params=ISOLATIONS)
def env(request, open_home):
    """(isolation, cwd, uid): a work folder owned by a fresh sandbox uid (root) or by us."""
    mode = request.param
    iso = detect_isolation(mode)
    if mode == "none" and IS_ROOT:
        iso = Isolation("none", describe_isolation("none", True), switch_user=True)  # bash-only commands below
    cwd = open_home / "work"
    cwd.mkdir()
    uid = sandbox_uid(f"test-{time.time_ns()}") if iso.switch_user else None
    if uid is not None:
        os.chown(cwd, uid, uid)
    yield iso, cwd, uid
    if uid is not None:
        assert kill_uid(uid)


def _run(env, command, **limits):
    iso, cwd, uid = env
    return run_command(command, cwd=cwd, limits=Limits(**limits), isolation=iso, uid=uid)


def test_isolation_is_described():
    for mode in ("auto", "none"):
        iso = detect_isolation(mode)
        assert iso.kind in ("bwrap", "none") and iso.detail
    assert "NO filesystem or network isolation" in detect_isolation("none").detail


def test_without_bubblewrap_auto_falls_back_and_says_so(monkeypatch):
    import agent_rl_sandbox.tools.sandbox._runner as runner

    real_which = runner.shutil.which
    monkeypatch.setattr(runner.shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    iso = detect_isolation("auto")
    assert iso.kind == "none" and "NO filesystem or network isolation" in iso.detail
    with pytest.raises(RuntimeError, match="install the `bubblewrap` package"):
        detect_isolation("bwrap")


def test_wall_time_kills_the_whole_group(env):
    # a duration unique to this run: another test run on the same machine must not be mistaken for ours
    mark = f"77.{secrets.randbelow(10**6):06d}"
    t0 = time.monotonic()
    res = _run(env, f"(sleep {mark} &); sleep 60.{mark[3:]} & sleep 61", wall_seconds=1)
    assert res.limit_hit == "wall_time"
    assert time.monotonic() - t0 < 10
    time.sleep(0.2)
    ours = (f"sleep {mark}", f"sleep 60.{mark[3:]}")
    leftover = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) in ours]
    assert not leftover, "a background child outlived the wall-time kill"


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def test_cpu_time_limit(env):
    res = _run(env, "while :; do :; done", cpu_seconds=1, wall_seconds=20)
    assert res.limit_hit == "cpu_time", res
    assert res.duration_s < 15


def test_memory_limit(env):
    # bash's own allocator reports the failure; python would say MemoryError (tested at service level)
    res = _run(env, "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo ${#x}", memory_mb=128)
    assert res.exit_code != 0
    assert res.limit_hit == "memory", (res.exit_code, res.stderr[-300:])


def test_file_size_limit(env):
    res = _run(env, "head -c 5000000 /dev/zero > big.bin", file_size_mb=1)
    assert res.limit_hit == "file_size", (res.exit_code, res.stderr)
    assert (env[1] / "big.bin").stat().st_size <= 1024 * 1024


def test_output_is_counted_and_cut_with_a_marker(env):
    res = _run(env, "yes 0123456789 | head -c 300000; echo err >&2", output_bytes=1000)
    assert res.exit_code == 0 and res.limit_hit is None
    assert res.stdout_bytes == 300000
    assert res.stdout.startswith("0123456789\n")
    assert CUT_MARKER.format(cut=299000, limit=1000) in res.stdout
    assert res.stderr == "err\n"


def test_endless_output_is_killed(env):
    res = _run(env, "yes", output_kill_mb=8, wall_seconds=30)
    assert res.limit_hit == "output"
    assert 8 * 1024 * 1024 < res.stdout_bytes < 64 * 1024 * 1024


def test_environment_is_not_inherited(env, monkeypatch):
    monkeypatch.setenv("AGENT_RL_SANDBOX_TEST_SECRET", "sk-live-should-never-leak")
    iso, cwd, uid = env
    res = run_command(
        "env; cat /proc/self/environ",
        cwd=cwd,
        limits=Limits(),
        isolation=iso,
        uid=uid,
        credentials={"FAKE_API_KEY": "fake-not-a-secret"},
    )
    assert "sk-live" not in res.stdout
    assert "FAKE_API_KEY=fake-not-a-secret" in res.stdout


@requires_root
def test_fork_bomb_is_contained_and_cleaned_up(env):
    iso, cwd, uid = env
    assert uid is not None
    with peak_processes(uid) as peak:
        res = run_command(
            "bomb(){ bomb | bomb & }; bomb; sleep 60",
            cwd=cwd,
            isolation=iso,
            uid=uid,
            limits=Limits(processes=32, wall_seconds=3),
        )
    assert res.limit_hit == "wall_time"
    assert 4 <= peak[0] <= 32, f"peak {peak[0]} processes"
    assert pids_of_uid(uid) == []


@requires_root
def test_live_processes_kill_all(env):
    iso, cwd, uid = env
    live = LiveProcesses()
    out = {}
    th = threading.Thread(
        target=lambda: out.update(
            res=run_command(
                "sleep 50 & sleep 60", cwd=cwd, isolation=iso, uid=uid, limits=Limits(wall_seconds=60), live=live
            )
        )
    )
    th.start()
    for _ in range(200):
        if live.snapshot():
            break
        time.sleep(0.01)
    time.sleep(0.2)
    assert live.kill_all() == 1
    th.join(timeout=10)
    assert not th.is_alive()
    assert out["res"].exit_code != 0
    assert pids_of_uid(uid) == []
    assert live.snapshot() == {}


@requires_root
def test_the_ledger_marks_a_run_until_none_of_its_processes_is_left(env, tmp_path):
    """A run of a uid is in the ledger from before its process starts until its end-of-run kill
    found nothing of the uid: while it runs, :meth:`LiveProcesses.kill_uid` scans and kills
    everything (a double-forked, ``setsid``-ed background process included); after a clean end
    there is no marker (a reset then skips the scan) and no process of the uid, even one the
    command double-forked and ``setsid``-ed before it returned."""
    iso, cwd, uid = env
    ledger = UidLedger(tmp_path / "procs")
    live = LiveProcesses(ledger)
    assert live.kill_uid(uid) and not ledger.maybe_live(uid)
    out = {}
    th = threading.Thread(
        target=lambda: out.update(
            res=run_command(BACKGROUND, cwd=cwd, isolation=iso, uid=uid, limits=Limits(wall_seconds=60), live=live)
        )
    )
    th.start()
    for _ in range(500):
        if len(pids_of_uid(uid)) >= 3:
            break
        time.sleep(0.01)
    assert len(pids_of_uid(uid)) >= 3
    assert ledger.maybe_live(uid)  # in flight
    assert live.kill_uid(uid)
    assert pids_of_uid(uid) == []
    th.join(timeout=20)
    assert not th.is_alive() and out["res"].exit_code != 0
    assert not ledger.maybe_live(uid)  # it ended with nothing of the uid left
    res = run_command(
        "( setsid bash -c 'sleep 300 & sleep 301' & ); echo started",
        cwd=cwd,
        isolation=iso,
        uid=uid,
        limits=Limits(wall_seconds=60),
        live=live,
    )
    assert res.stdout == "started\n", res.stderr
    assert pids_of_uid(uid) == [] and not ledger.maybe_live(uid)
    assert live.kill_uid(uid) and list((tmp_path / "procs").iterdir()) == [tmp_path / "procs" / str(uid)]


@requires_root
def test_a_dead_servers_run_keeps_its_uid_marked_until_a_full_kill(open_home, tmp_path):
    """A server process of the home that dies mid-run leaves the command's double-forked,
    ``setsid``-ed processes (plain-subprocess isolation: only the direct child dies with it) and
    the run's marker, unlocked: a process that already found the uid empty once must scan again,
    kills them, and drops the marker."""
    uid = sandbox_uid(f"test-{time.time_ns()}")
    cwd = open_home / "work"
    cwd.mkdir()
    os.chown(cwd, uid, uid)
    ledger = UidLedger(tmp_path / "procs")
    live = LiveProcesses(ledger)
    assert live.kill_uid(uid) and not ledger.maybe_live(uid)  # the ledger is trusted for it from now on
    try:
        crash_a_server_mid_run(ledger.folder, uid, cwd)
        assert ledger.maybe_live(uid)
        assert live.kill_uid(uid)
        assert pids_of_uid(uid) == [] and not ledger.maybe_live(uid)
    finally:
        kill_uid(uid)


@requires_root
def test_sandbox_uids_are_stable_unprivileged_and_distinct():
    ids = [f"sbx_{i:012x}" for i in range(200)]
    uids = [sandbox_uid(i) for i in ids]
    assert uids == [sandbox_uid(i) for i in ids]
    assert len(set(uids)) == len(uids)
    assert all(u > 65535 for u in uids)


def test_memory_limit_holds_for_the_whole_process_tree(env):
    """RLIMIT_AS bounds each process alone: four children of 80 MB each stay under a 160 MB limit
    one by one, but together hold twice it, so the tree's memory (polled about once a second) kills
    the command with a memory limit hit (red team: 4 x 400 MB held against 1,024 MB)."""
    hold = "x=$(head -c 80000000 /dev/zero | tr '\\0' a); sleep 20"
    t0 = time.monotonic()
    res = _run(env, f"for i in 1 2 3 4; do ( {hold} ) & done; wait; echo survived", memory_mb=160, wall_seconds=25)
    assert res.limit_hit == "memory", (res.exit_code, res.limit_hit, res.stdout[-200:], res.stderr[-300:])
    assert "survived" not in res.stdout and time.monotonic() - t0 < 15


def test_memory_of_one_modest_tree_is_no_limit_hit(env):
    res = _run(
        env,
        "for i in 1 2; do ( x=$(head -c 20000000 /dev/zero | tr '\\0' a); sleep 2 ) & done; wait; echo ok",
        memory_mb=160,
    )
    assert res.limit_hit is None and res.stdout.strip() == "ok", (res.limit_hit, res.stderr[-300:])

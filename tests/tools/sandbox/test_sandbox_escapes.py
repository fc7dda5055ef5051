"""Escape attempts through the sandbox tools are refused and recorded, and change nothing outside.

Covers the issue's list: path traversal, absolute paths, symlinks (to /etc, made with the shell,
shipped in the fixture, as the last component, dangling, as the ancestor of a folder that does not
exist yet), device files and FIFOs, writing outside through a command, network connections, a fork
bomb, a 1 GB output, a command sleeping past its limit, and reading the host's environment for
secrets. A canary file outside the sandbox must stay byte-identical throughout.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import time
import uuid
from pathlib import Path

import pytest
from sandbox_helpers import IS_ROOT, peak_processes, requires_root, reset, run, steps, write_task

import agent_rl_sandbox
from agent_rl_sandbox.schemas.tools import (
    SandboxClaimInput,
    SandboxFinishInput,
    SandboxReadFileInput,
    SandboxStateInput,
    SandboxWriteFileInput,
)
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR
from agent_rl_sandbox.tools.sandbox._runner import CUT_MARKER, pids_of_uid, python_mounts


class Canary:
    """A folder outside every sandbox with one file; :meth:`intact` checks nothing changed."""

    def __init__(self, root: Path):
        self.dir = root / "outside"
        self.dir.mkdir()
        self.file = self.dir / "canary.txt"
        self.file.write_text("canary: must never change\n")
        self._state = self._snapshot()

    def _snapshot(self):
        st = self.file.stat()
        return self.file.read_bytes(), st.st_mtime_ns, st.st_mode, sorted(os.listdir(self.dir))

    def intact(self) -> bool:
        return self._snapshot() == self._state


def _refused(services, sid, fn, inp) -> str:
    before = len(steps(services, sid))
    with pytest.raises(ActionError) as ei:
        fn(inp)
    after = steps(services, sid)
    assert len(after) == before + 1, "the refusal must be recorded as a step"
    assert after[-1].outcome == "refused"
    return ei.value.message


def _all_file_tools_refuse(services, sid, path: str) -> None:
    sb = services.sandbox
    _refused(services, sid, sb.read_file, SandboxReadFileInput(sandbox_id=sid, path=path))
    _refused(services, sid, sb.write_file, SandboxWriteFileInput(sandbox_id=sid, path=path, content="pwned\n"))
    _refused(services, sid, sb.claim, SandboxClaimInput(sandbox_id=sid, paths=[path]))


def test_path_escapes_are_refused_recorded_and_change_nothing(bwrap_services, tmp_path):
    canary = Canary(tmp_path)
    sid = reset(bwrap_services).sandbox_id
    sb = bwrap_services.sandbox
    # text checks: traversal, absolute, home-relative
    for path in ("../../etc/passwd", "shopcart/../../x", "/etc/passwd", str(canary.file), "~/.bashrc"):
        _all_file_tools_refuse(bwrap_services, sid, path)
    # links made with the shell: to /etc, to the canary (last component), dangling, linked ancestor
    res = run(
        bwrap_services,
        sid,
        f"ln -s /etc etc_link && ln -s {canary.file} last && ln -s {canary.dir}/new.txt dangling "
        f"&& ln -s {canary.dir} anc && ln -s /dev/zero zero && mkfifo fifo && ls -la",
    )
    assert res.exit_code == 0, res.stderr
    for path in (
        "etc_link/passwd",
        "etc_link/pwned",
        "last",
        "dangling",
        "anc/canary.txt",
        "anc/new/deeper/file.txt",
        "anc/new.txt",
        "zero",
    ):
        _all_file_tools_refuse(bwrap_services, sid, path)
    # a FIFO is refused, not read (which would block forever) or written
    msg = _refused(bwrap_services, sid, sb.read_file, SandboxReadFileInput(sandbox_id=sid, path="fifo"))
    assert "FIFO" in msg
    _refused(bwrap_services, sid, sb.write_file, SandboxWriteFileInput(sandbox_id=sid, path="fifo", content="x"))
    # a symlink pointing inside the sandbox may be read but never written through
    run(bwrap_services, sid, "ln -s shopcart/pricing.py inside_link")
    assert "apply_discount" in sb.read_file(SandboxReadFileInput(sandbox_id=sid, path="inside_link")).content
    _refused(bwrap_services, sid, sb.write_file, SandboxWriteFileInput(sandbox_id=sid, path="inside_link", content="x"))
    assert canary.intact()
    assert not (canary.dir / "new.txt").exists() and not (canary.dir / "new").exists()
    refusals = [s for s in steps(bwrap_services, sid) if s.outcome == "refused"]
    assert len(refusals) >= 3 * 13 + 3
    assert all(s.provenance == "server" and s.extra.get("refused") for s in refusals)


@requires_root
def test_device_files_and_hard_links_are_refused(bwrap_services, tmp_path):
    canary = Canary(tmp_path)
    sid = reset(bwrap_services).sandbox_id
    repo = bwrap_services.settings.sandboxes_dir / sid / "repo"
    os.mknod(repo / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what a fixture or a root process could leave
    try:
        os.link(canary.file, repo / "hardlink.txt")  # same filesystem, made outside the agent's reach
    except OSError as e:  # an overlay working copy is a filesystem of its own: no link from outside at all
        assert e.errno == errno.EXDEV and bwrap_services.sandbox.working_copy[0] == "overlay"
        os.link(repo / "shopcart" / "pricing.py", repo / "hardlink.txt")  # a second link is still refused
    sb = bwrap_services.sandbox
    msg = _refused(bwrap_services, sid, sb.read_file, SandboxReadFileInput(sandbox_id=sid, path="null"))
    assert "device" in msg
    _refused(bwrap_services, sid, sb.write_file, SandboxWriteFileInput(sandbox_id=sid, path="null", content="x"))
    msg = _refused(
        bwrap_services, sid, sb.write_file, SandboxWriteFileInput(sandbox_id=sid, path="hardlink.txt", content="x")
    )
    assert "hard link" in msg
    assert canary.intact()


def test_symlinks_shipped_in_a_fixture_are_refused(tmp_path):
    canary = Canary(tmp_path)
    task_root = write_task(tmp_path / "tasks" / "links", "user/links")
    repo = task_root / "repo"
    os.symlink(canary.file, repo / "shipped_file")
    os.symlink(canary.dir, repo / "shipped_dir")
    os.symlink("/etc", repo / "etc")
    os.symlink(tmp_path / "nowhere" / "x", repo / "shipped_dangling")
    services = Services.build(Settings(home=tmp_path / "home", task_dirs=(tmp_path / "tasks",)))
    try:
        out = reset(services, "user/links")
        assert {"shipped_file", "shipped_dir", "etc"} <= set(out.files)
        for path in (
            "shipped_file",
            "shipped_dir/canary.txt",
            "shipped_dir/new/file",
            "etc/hostname",
            "shipped_dangling",
        ):
            _all_file_tools_refuse(services, out.sandbox_id, path)
    finally:
        services.sandbox.close()
        services.close()
    assert canary.intact()
    assert not (tmp_path / "nowhere").exists()


def test_writes_outside_through_a_command_fail(bwrap_services, tmp_path):
    canary = Canary(tmp_path)
    sid = reset(bwrap_services).sandbox_id
    sandbox_root = bwrap_services.settings.sandboxes_dir / sid
    head = (sandbox_root / "git" / "HEAD").read_bytes()
    for cmd in (
        "echo pwned > /etc/agent-rl-sandbox-pwned",
        "touch /usr/local/pwned",
        f"echo pwned > {BUILTIN_TASKS_DIR}/pwned",
        "echo pwned > ../git/HEAD",
        "mkdir -p ../verifier && echo 'exit 0' > ../verifier/test.sh",
        f"echo pwned >> {canary.file}",
    ):
        res = run(bwrap_services, sid, cmd)
        assert res.exit_code != 0 or "pwned" not in Path(canary.file).read_text(), cmd
    assert not Path("/etc/agent-rl-sandbox-pwned").exists()
    assert not Path("/usr/local/pwned").exists()
    assert not (BUILTIN_TASKS_DIR / "pwned").exists()
    assert (sandbox_root / "git" / "HEAD").read_bytes() == head
    assert not (sandbox_root / "verifier" / "test.sh").exists()
    assert canary.intact()


def test_network_is_unreachable_from_a_command(bwrap_services):
    # a TCP listener and a unix socket on the host that the sandbox must not reach
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    port = tcp.getsockname()[1]
    sock_path = Path("/run") / f"ars-test-{os.getpid()}.sock"
    unix = None
    if os.access("/run", os.W_OK):
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(str(sock_path))
        unix.listen()
    try:
        sid = reset(bwrap_services).sandbox_id
        probe = (
            "python - <<'EOF'\n"
            "import socket, sys\n"
            "fails = 0\n"
            f"targets = [('127.0.0.1', {port}), ('1.1.1.1', 53), ('10.0.0.1', 80)]\n"
            "for t in targets:\n"
            "    try:\n"
            "        socket.create_connection(t, timeout=2).close(); print('CONNECTED', t)\n"
            "    except OSError as e:\n"
            "        fails += 1; print('refused', t, e)\n"
            f"try:\n    s = socket.socket(socket.AF_UNIX); s.connect({str(sock_path)!r}); print('CONNECTED unix')\n"
            "except OSError as e:\n    fails += 1; print('refused unix', e)\n"
            "sys.exit(0 if fails == 4 else 1)\n"
            "EOF"
        )
        res = run(bwrap_services, sid, probe)
        assert res.exit_code == 0, res.stdout + res.stderr
        assert "CONNECTED" not in res.stdout
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # control: reachable from the host
    finally:
        tcp.close()
        if unix is not None:
            unix.close()
            sock_path.unlink(missing_ok=True)


def test_host_environment_and_secret_folders_are_invisible(bwrap_services, monkeypatch):
    monkeypatch.setenv("AGENT_RL_SANDBOX_TEST_SECRET", "sk-live-should-never-leak")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "sk-live-should-never-leak-2")
    sid = reset(bwrap_services).sandbox_id
    home = bwrap_services.settings.home
    res = run(
        bwrap_services,
        sid,
        "env; cat /proc/self/environ; cat /proc/1/environ; grep -rs sk-live /proc/*/environ; "
        f"ls -A /root /home {home} {BUILTIN_TASKS_DIR}; cat {home}/store.db | head -c 100; "
        f"ls {BUILTIN_TASKS_DIR}/claim-before-edit/tests",
    )
    assert "sk-live" not in res.stdout + res.stderr
    assert "SHOPCART_API_TOKEN=fake-shopcart-token-not-a-secret" in res.stdout  # the task's fake credential
    assert "test_hidden.py" not in res.stdout
    assert "SQLite" not in res.stdout
    listing = run(bwrap_services, sid, f"ls -A /root /home {BUILTIN_TASKS_DIR}; ls -A {home}/sandboxes").stdout
    assert "claim-before-edit" not in listing
    assert listing.count("sbx_") == 1, listing  # only its own sandbox folder, as a mount point


def test_only_system_folders_and_the_interpreter_are_visible(bwrap_services):
    """Another copy of the project anywhere on the host (here a decoy hidden verifier under /srv and
    /opt, and this checkout itself) is neither readable nor listable; the tools still work."""
    hidden = "claim-before-edit/tests/test_hidden.py"
    decoys = []
    for top in (Path("/srv"), Path("/opt")):
        if not os.access(top, os.W_OK):
            continue
        d = top / f"ars-decoy-{uuid.uuid4().hex[:8]}"
        (d / "tasks" / hidden).parent.mkdir(parents=True)
        (d / "tasks" / hidden).write_text("DECOY_HIDDEN_VERIFIER = 1\n")
        decoys.append(d)
    checkout = Path(agent_rl_sandbox.__file__).resolve().parents[1]
    prefixes = [p for _, p in python_mounts()]
    try:
        sid = reset(bwrap_services).sandbox_id
        paths = " ".join(f"{d} {d}/tasks/{hidden}" for d in decoys)
        res = run(
            bwrap_services,
            sid,
            f"cat {paths}; ls -AR {' '.join(str(d) for d in decoys)}; grep -rs DECOY_HIDDEN / --include=*.py -l "
            f"--exclude-dir=proc --exclude-dir=usr; cat {checkout}/pyproject.toml {BUILTIN_TASKS_DIR.parent}/__init__.py",
        )
        assert "DECOY" not in res.stdout and "ars-decoy" not in res.stdout, res.stdout
        assert "agent_rl_sandbox" not in res.stdout and "[project]" not in res.stdout
        for d in decoys:
            assert run(bwrap_services, sid, f"test -e {d} || test -e {d.parent}").exit_code == 1
        # the checkout holding the package is absent, apart from the folders that lead to a prefix
        ls = run(bwrap_services, sid, f"ls -A {checkout}")
        leading = {p.relative_to(checkout).parts[0] for p in prefixes if p.is_relative_to(checkout) and p != checkout}
        assert set(ls.stdout.split()) <= leading, ls.stdout
        assert "agent_rl_sandbox" not in ls.stdout
        # the root holds only the allow-list, the interpreter's and the store's leading folders
        allowed = {"usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc", "tmp", "var"}
        allowed |= {p.parts[1] for p in [*prefixes, bwrap_services.settings.home.resolve()] if len(p.parts) > 1}
        allowed.add("run")  # holds only the server's shims and effect socket (/run/ars), not the host's /run
        root = run(bwrap_services, sid, "ls -A /").stdout.split()
        assert set(root) <= allowed and "usr" in root, root
        assert run(bwrap_services, sid, "ls -A /run").stdout.split() == ["ars"]
        # the shims, the effect socket, the past-check marker and the stand-in pip package ensurepip copies
        listed = set(run(bwrap_services, sid, "ls -A /run/ars").stdout.split())
        assert listed == {"bin", "effects.sock", "past-check", "pip"}
        for gone in ("srv", "opt", "mnt", "home", "run", "container_info.json", ".dockerenv"):
            assert gone not in root or gone in allowed
        # the tools a task needs still work
        tools = run(
            bwrap_services,
            sid,
            "set -e; python -c 'import sys; print(\"py\", sys.version_info[0])'; python -m pytest --version; "
            "git --version; g=$(mktemp -d); git -C $g init -q; git -C $g -c user.name=a -c user.email=a@b "
            "commit -q --allow-empty -m x; git -C $g log --oneline | wc -l; "
            "echo $BASH_VERSION | cut -c1; printf 'b\\na\\n' | sort | head -1; echo hi | sha256sum | cut -c1-8; "
            "ls /usr/bin/env; echo tmp > /var/tmp/x && cat /var/tmp/x",
        )
        assert tools.exit_code == 0, tools.stdout + tools.stderr
        lines = [line.strip() for line in tools.stdout.splitlines()]
        assert lines[0] == "py 3" and lines[1].startswith("pytest ") and lines[2].startswith("git version"), lines
        assert lines[3:] == ["1", lines[4], "a", "98ea6e4f", "/usr/bin/env", "tmp"] and lines[4].isdigit(), lines
    finally:
        for d in decoys:
            shutil.rmtree(d, ignore_errors=True)


@requires_root
def test_fork_bomb_is_contained(bwrap_services):
    sid = reset(bwrap_services).sandbox_id
    uid = bwrap_services.sandbox.sandbox_uid(sid)
    limit = bwrap_services.sandbox.task("claim-before-edit").config.limits.processes
    with peak_processes(uid) as peak:
        res = run(bwrap_services, sid, "bomb(){ bomb | bomb & }; bomb; sleep 60", timeout_seconds=3)
    assert res.limit_hit == "wall_time"
    assert peak[0] <= limit
    assert pids_of_uid(uid) == []
    assert run(bwrap_services, sid, "echo alive").stdout == "alive\n"  # the sandbox still works afterwards


def test_one_gigabyte_of_output_is_counted_and_cut(bwrap_services):
    sid = reset(bwrap_services).sandbox_id
    t0 = time.monotonic()
    res = run(bwrap_services, sid, "head -c 1073741824 /dev/zero | tr '\\0' x")
    elapsed = time.monotonic() - t0
    assert res.exit_code == 0 and res.limit_hit is None
    assert res.stdout_bytes == 1 << 30
    assert len(res.stdout) < 20_000 and "more bytes cut" in res.stdout
    assert (
        res.output_path and CUT_MARKER.format(cut=(1 << 30) - 65536, limit=65536) in Path(res.output_path).read_text()
    )
    step = steps(bwrap_services, sid)[-1]
    assert step.extra["stdout_bytes"] == 1 << 30
    assert elapsed < 30


def test_command_sleeping_past_the_limit_is_killed(bwrap_services):
    sid = reset(bwrap_services).sandbox_id
    t0 = time.monotonic()
    res = run(bwrap_services, sid, "sleep 1000 & sleep 600", timeout_seconds=1)
    assert res.limit_hit == "wall_time"
    assert time.monotonic() - t0 < 10
    step = steps(bwrap_services, sid)[-1]
    assert step.outcome == "limit" and step.extra["limit_hit"] == "wall_time"
    assert "wall_time" in step.observation.results[0].content
    if IS_ROOT:
        assert pids_of_uid(bwrap_services.sandbox.sandbox_uid(sid)) == []


def test_memory_limit_is_reported(bwrap_services):
    sid = reset(bwrap_services).sandbox_id
    res = run(bwrap_services, sid, "python -c 'x = bytearray(4 * 1024**3)'")
    assert res.exit_code != 0 and res.limit_hit == "memory"


def test_verifier_is_copied_fresh_and_its_result_folder_emptied(tmp_path):
    verifier = (
        '[ -z "$(ls -A "$VERIFIER_LOGS")" ] || { echo "stale result folder"; exit 9; }\n'
        'grep -q ORIGINAL "$VERIFIER_DIR/marker" || { echo "verifier not fresh"; exit 8; }\n'
        'echo 1 > "$VERIFIER_LOGS/result.json"\n'
        "grep -q 42 answer.txt"
    )
    root = write_task(tmp_path / "tasks" / "fresh", "user/fresh", verifier=verifier)
    (root / "tests" / "marker").write_text("ORIGINAL\n")
    services = Services.build(Settings(home=tmp_path / "home", task_dirs=(tmp_path / "tasks",)))
    try:
        sid = reset(services, "user/fresh").sandbox_id
        sroot = services.settings.sandboxes_dir / sid
        # leftovers an earlier run (or a compromised agent) might have placed where the verifier lives
        (sroot / "verifier").mkdir(exist_ok=True)
        (sroot / "verifier" / "test.sh").write_text("exit 0\n")
        (sroot / "verifier" / "marker").write_text("ORIGINAL\n")
        (sroot / "logs" / "verifier").mkdir(parents=True, exist_ok=True)
        (sroot / "logs" / "verifier" / "result.json").write_text('{"passed": true}')
        # the agent plants its own verifier and results inside the repo
        run(services, sid, "mkdir -p tests && echo 'exit 0' > tests/test.sh && echo pass > result.json")
        out = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="done"))
        assert out.verifier_exit_code == 1, out.verifier_output
        assert not out.passed
        assert (sroot / "logs" / "verifier" / "result.json").read_text().strip() == "1"
    finally:
        services.sandbox.close()
        services.close()


def test_edits_to_protected_test_paths_are_recorded(bwrap_services):
    sb = bwrap_services.sandbox
    sid = reset(bwrap_services).sandbox_id
    w = sb.write_file(
        SandboxWriteFileInput(sandbox_id=sid, path="tests/test_pricing.py", content="def test_x():\n    pass\n")
    )
    assert w.warning and "protected" in w.warning
    assert steps(bwrap_services, sid)[-1].extra["protected_paths_touched"] == ["tests/test_pricing.py"]
    run(bwrap_services, sid, "echo '# x' >> tests/test_cart.py")
    assert steps(bwrap_services, sid)[-1].extra["protected_paths_touched"] == ["tests/test_cart.py"]
    st = sb.state(SandboxStateInput(sandbox_id=sid))
    assert st.protected_paths_touched == ["tests/test_cart.py", "tests/test_pricing.py"]
    out = sb.finish(SandboxFinishInput(sandbox_id=sid, message="Ran `python -m pytest -q`: all passed."))
    assert "tests_untouched" in out.failed_criteria


FORCE_PASS = """
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


def test_test_config_written_by_the_agent_cannot_decide_the_reward(bwrap_services):
    sb = bwrap_services.sandbox
    sid = reset(bwrap_services).sandbox_id
    for path in ("conftest.py", "tests/conftest.py"):
        sb.write_file(SandboxWriteFileInput(sandbox_id=sid, path=path, content=FORCE_PASS))
    sb.write_file(
        SandboxWriteFileInput(sandbox_id=sid, path="pytest.ini", content="[pytest]\naddopts = -p no:terminal\n")
    )
    assert run(bwrap_services, sid, "python -m pytest -q").exit_code == 0  # the agent's own run is fooled
    out = sb.finish(SandboxFinishInput(sandbox_id=sid, message="Ran `python -m pytest -q`: all passed."))
    assert out.verifier_exit_code not in (0, None), out.verifier_output
    assert not out.passed

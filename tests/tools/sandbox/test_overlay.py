"""Copy-on-write working copies (``_overlay``) and the cached base (``_base``): a reset is a fresh
sandbox byte for byte, the base and other sandboxes cannot be written, no mount outlives its
sandbox or a crashed server, and the copy fallback gives the same trees."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import HAS_BWRAP, IS_ROOT, run, write_task

from agent_rl_sandbox.schemas.tools import (
    SandboxFinishInput,
    SandboxResetInput,
    SandboxStateInput,
    SandboxWriteFileInput,
)
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox._base import BaseCache, content_key
from agent_rl_sandbox.tools.sandbox._git import WorkingCopy
from agent_rl_sandbox.tools.sandbox._overlay import Layers, mounts_under, probe, wait_reaped

FILES = {
    "answer.txt": "0\n",
    "src/pkg/__init__.py": "",
    "src/pkg/mod.py": "X = 1\n",
    "src/pkg/deep/a.txt": "a\n",
    "docs/readme.md": "# docs\n",
    ".env": "TOKEN=fake\n",
    "tests/test_answer.py": "def test_ok():\n    assert True\n",
}

OVERLAY_WHY = probe(Path("/tmp")) if IS_ROOT else "not root"
requires_overlay = pytest.mark.skipif(OVERLAY_WHY is not None, reason=f"overlays unavailable: {OVERLAY_WHY}")


def make_task(root: Path) -> Path:
    task = write_task(root / "tasks" / "cow", "user/cow", files=FILES)
    repo = task / "repo"
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    os.symlink("src/pkg/mod.py", repo / "link-to-mod")
    return task


def manifest(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: kind, permission bits, owner, and content hash or link target."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                what: str = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                what = ""
            out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, what)
    st = os.lstat(root)
    out["."] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, "")
    return out


def owners_as(m: dict[str, tuple], uid: int | None) -> dict[str, tuple]:
    """The manifest with owners replaced by a placeholder where they are the sandbox's uid (two
    sandboxes differ only in that)."""
    return {k: (v[0], v[1], "U" if v[2] == uid else v[2], "U" if v[3] == uid else v[3], v[4]) for k, v in m.items()}


def git_state(svc, sid: str) -> tuple[str, str, list[str]]:
    d = svc.sandbox._dirs(sid)
    wc = WorkingCopy(d["git"], d["repo"])
    staged = wc.git("ls-files", "-s", "-z").decode()
    refs = wc.git("for-each-ref", "--format=%(refname) %(objectname)").decode()
    loose = sorted(p.name for p in (d["git"] / "objects").iterdir() if len(p.name) == 2)
    return staged, refs, loose


@pytest.fixture(params=["bwrap", "none"])
def cow(request, open_home):
    """Services (bubblewrap or plain-subprocess isolation) on a home every uid can traverse, with
    the overlay in force (skipped where overlays cannot be mounted)."""
    if OVERLAY_WHY is not None:
        pytest.skip(f"overlays unavailable: {OVERLAY_WHY}")
    if request.param == "bwrap" and not HAS_BWRAP:
        pytest.skip("bubblewrap not installed")
    make_task(open_home)
    s = Services.build(
        Settings(
            home=open_home / "home",
            task_dirs=(open_home / "tasks",),
            isolation=request.param,
            working_copy="overlay",
        )
    )
    yield s
    s.sandbox.close()
    s.close()
    wait_reaped()
    assert mounts_under(open_home) == []


def new(svc) -> str:
    return svc.sandbox.reset(SandboxResetInput(task_id="user/cow", agent_name="t")).sandbox_id


EDITS = textwrap.dedent(
    """
    set -e
    echo changed >> answer.txt
    rm src/pkg/mod.py
    rm -r docs
    mv src/pkg/deep src/pkg/moved
    mkdir -p new/dir/tree && echo n > new/dir/tree/f.txt
    chmod 755 answer.txt
    chmod 700 src
    ln -sf answer.txt link-to-mod
    ln answer.txt hard.txt
    printf 'A=b\\n' > .env
    mkdir src/pkg/deep && echo other > src/pkg/deep/a.txt
    touch -d 2001-01-01 run.sh
    """
)


@requires_overlay
def test_reset_after_arbitrary_edits_is_a_fresh_sandbox_byte_for_byte(cow):
    sb = cow.sandbox
    fresh_sid = new(cow)
    sid = new(cow)
    fresh = owners_as(manifest(sb._dirs(fresh_sid)["repo"]), sb.sandbox_uid(fresh_sid))
    fresh_git = git_state(cow, fresh_sid)
    before = owners_as(manifest(sb._dirs(sid)["repo"]), sb.sandbox_uid(sid))
    assert before == fresh
    out = run(cow, sid, EDITS)
    assert out.exit_code == 0, out.stderr
    sb.write_file(SandboxWriteFileInput(sandbox_id=sid, path="written/by/tool.txt", content="w\n"))
    assert owners_as(manifest(sb._dirs(sid)["repo"]), sb.sandbox_uid(sid)) != fresh
    first = sb.reset(SandboxResetInput(task_id="user/cow", sandbox_id=sid, agent_name="t"))
    assert owners_as(manifest(sb._dirs(sid)["repo"]), sb.sandbox_uid(sid)) == fresh
    staged, refs, loose = git_state(cow, sid)
    assert (staged, refs) == fresh_git[:2] and loose == []
    wc = WorkingCopy(sb._dirs(sid)["git"], sb._dirs(sid)["repo"])
    assert wc.snapshot() == first.tree_hash
    assert wc.git("diff-files", "--name-only").decode() == ""  # the index's stat data fit: nothing to hash again
    # and again after a second episode, through a finish
    run(cow, sid, "rm -rf src && echo 42 > answer.txt")
    sb.finish(SandboxFinishInput(sandbox_id=sid, message="done"))
    again = sb.reset(SandboxResetInput(task_id="user/cow", sandbox_id=sid, agent_name="t"))
    assert again.tree_hash == first.tree_hash
    assert owners_as(manifest(sb._dirs(sid)["repo"]), sb.sandbox_uid(sid)) == fresh
    staged, refs, loose = git_state(cow, sid)
    assert staged == fresh_git[0] and loose == [] and "refs/finished/" in refs  # the finished tree stays pinned
    # the git index is a hard link of the overlay's pristine one: two episodes of snapshots (git
    # replaces its index by a rename) left that one byte for byte the base's
    layers = Layers(sb._dirs(sid)["root"])
    base = sb.bases.by_key(layers.base_key() or "")
    assert base is not None and layers.index_file.read_bytes() == base.index_for(sb.sandbox_uid(sid))
    assert os.path.samefile(layers.index_file, sb._dirs(sid)["git"] / "index")


@requires_overlay
@pytest.mark.parametrize("swap", ["beneath", "unmount"])
def test_a_reset_leaves_the_old_tree_to_its_holders_and_the_new_one_fresh(cow, swap, monkeypatch):
    """A reset swaps overlays (mounted beneath the old one, which is moved away and detached in the
    background; or, the fallback, unmounted in the call): a process still holding files and
    folders of the old tree reads the old episode's state and writes only there; the new tree is a
    fresh sandbox byte for byte, and no old overlay stays mounted anywhere."""
    from agent_rl_sandbox.tools.sandbox import _overlay

    monkeypatch.setattr(_overlay, "_BENEATH_WHY", None if swap == "beneath" else "forced by the test")
    sb = cow.sandbox
    fresh_sid, sid = new(cow), new(cow)
    fresh = owners_as(manifest(sb._dirs(fresh_sid)["repo"]), sb.sandbox_uid(fresh_sid))
    fresh_git = git_state(cow, fresh_sid)
    repo = sb._dirs(sid)["repo"]
    base_dir = next(p for p in (cow.settings.home / "bases").iterdir() if not p.name.startswith("."))
    base_before = manifest(base_dir)
    assert run(cow, sid, "echo episode-1 > answer.txt && mkdir -p made && echo m > made/f").exit_code == 0
    f = open(repo / "answer.txt", "r+")  # noqa: SIM115 - held across the reset on purpose
    d = os.open(repo / "src", os.O_RDONLY | os.O_DIRECTORY)
    old_root = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sb.reset(SandboxResetInput(task_id="user/cow", sandbox_id=sid, agent_name="t"))
        if swap == "beneath":
            assert _overlay._BENEATH_WHY is None, _overlay._BENEATH_WHY  # this kernel mounts beneath
        assert owners_as(manifest(repo), sb.sandbox_uid(sid)) == fresh
        # the holder reads the old episode; its writes go to the old layers (or fail once the
        # background thread has deleted them: ENOENT), never to the new tree
        assert f.read() == "episode-1\n"
        f.write("late write\n")
        f.flush()
        with contextlib.suppress(OSError):
            fd = os.open("leaked.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d)
            os.write(fd, b"leak\n")
            os.close(fd)
        with contextlib.suppress(OSError):
            os.mkdir("leaked-dir", dir_fd=old_root)
        assert owners_as(manifest(repo), sb.sandbox_uid(sid)) == fresh
        wait_reaped()
        assert owners_as(manifest(repo), sb.sandbox_uid(sid)) == fresh
        assert (repo / "answer.txt").read_text() == "0\n"
        assert run(cow, sid, "cat answer.txt; ls src made leaked-dir 2>&1 | sort").stdout.startswith("0\n")
        staged, refs, loose = git_state(cow, sid)
        assert (staged, refs) == fresh_git[:2] and loose == []
        assert [p for p in mounts_under(sb._dirs(sid)["root"]) if p not in (repo, repo.parent / "ovl" / "lower")] == []
        assert not any(p.name.startswith("trash-") for p in (repo.parent / "ovl").iterdir())  # old layers deleted
    finally:
        f.close()
        os.close(d)
        os.close(old_root)
    assert manifest(base_dir) == base_before
    # and the next reset, with nothing held, is fresh as well
    run(cow, sid, "echo episode-2 > answer.txt")
    sb.reset(SandboxResetInput(task_id="user/cow", sandbox_id=sid, agent_name="t"))
    assert owners_as(manifest(repo), sb.sandbox_uid(sid)) == fresh


ATTACKS = textwrap.dedent(
    """
    python3 - <<'EOF'
    import os, sys
    targets = sys.argv[1:]
    def tryit(what, fn):
        try:
            fn()
            print("OK", what)
        except OSError as e:
            print("no", what, e.errno)
    tryit("opaque xattr", lambda: os.setxattr("src", "trusted.overlay.opaque", b"y"))
    tryit("redirect xattr", lambda: os.setxattr("src", "trusted.overlay.redirect", b"/docs"))
    tryit("user xattr", lambda: os.setxattr("answer.txt", "user.overlay.opaque", b"y"))
    tryit("whiteout", lambda: os.mknod("docs/readme.md.wh", 0o020000 | 0o644, os.makedev(0, 0)))
    tryit("rename a base folder", lambda: os.rename("src/pkg", "renamed"))
    for t in targets:
        tryit("write " + t, lambda: open(os.path.join(t, "answer.txt"), "a").write("pwned\\n"))
        tryit("create in " + t, lambda: open(os.path.join(t, "new.txt"), "w").write("pwned\\n"))
        tryit("link from " + t, lambda: os.link(os.path.join(t, "answer.txt"), "stolen"))
        tryit("symlink to " + t, lambda: (os.symlink(t, "via"), open("via/answer.txt", "a").write("pwned\\n")))
        if os.path.lexists("via"):
            os.unlink("via")
    EOF
    """
)


@requires_overlay
def test_no_command_can_write_the_base_or_another_sandbox(cow):
    sb = cow.sandbox
    victim = new(cow)
    sid = new(cow)
    if sb.sandbox_uid(sid) is None:
        pytest.skip("commands run as the server's own root user here: no file is protected from them at all")
    base_dir = next(p for p in (cow.settings.home / "bases").iterdir() if not p.name.startswith("."))
    base_before = manifest(base_dir)
    victim_before = manifest(sb._dirs(victim)["repo"])
    root = sb._dirs(sid)["root"]
    targets = [
        base_dir / "tree",
        root / "ovl" / "lower",
        root / "ovl" / "upper",
        sb._dirs(victim)["repo"],
        sb._dirs(victim)["root"] / "ovl" / "lower",
        sb._dirs(victim)["root"] / "ovl" / "upper",
    ]
    cmd = ATTACKS.replace("python3 -", "python3 - " + " ".join(str(t) for t in targets))
    out = run(cow, sid, cmd)
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line for line in lines if line.startswith("OK") and "user xattr" not in line] == [], out.stdout
    # the tools and the renames inside the sandbox cannot reach them either
    run(cow, sid, "mv src/pkg elsewhere || cp -r src/pkg elsewhere && rm -rf src; ln -s / rootlink")
    for path in ("rootlink/etc/x", "elsewhere/../../ovl/x"):
        with pytest.raises(ActionError):
            sb.write_file(SandboxWriteFileInput(sandbox_id=sid, path=path, content="x"))
    assert manifest(base_dir) == base_before
    assert manifest(sb._dirs(victim)["repo"]) == victim_before
    # the verifier judges the merged tree the agent left, not the base
    state = sb.state(SandboxStateInput(sandbox_id=sid))
    assert "src/pkg/mod.py" in state.files_changed and "elsewhere/mod.py" in state.files_changed
    assert state.working_copy.startswith("overlay")


def _as_uid(uid: int, paths: list[Path]) -> list[str]:
    """In a child switched to ``uid`` on the host (no bubblewrap): which of ``paths`` it could
    write a file into or append to."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(r)
        got = []
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for p in paths:
                for target, mode in ((p / "answer.txt", "a"), (p / "new.txt", "w")):
                    try:
                        with open(target, mode) as f:
                            f.write("pwned\n")
                        got.append(str(target))
                    except OSError:
                        pass
        finally:
            os.write(w, "\n".join(got).encode())
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return [line for line in out.splitlines() if line]


@requires_overlay
def test_the_sandbox_uid_on_the_host_cannot_reach_the_layers(open_home):
    make_task(open_home)
    s = Services.build(Settings(home=open_home / "home", task_dirs=(open_home / "tasks",), working_copy="overlay"))
    try:
        sb = s.sandbox
        sid = new(s)
        if sb.sandbox_uid(sid) is None:
            pytest.skip("commands run as the server's own user here")
        root = sb._dirs(sid)["root"]
        base_dir = next(p for p in (open_home / "home" / "bases").iterdir() if not p.name.startswith("."))
        before = manifest(base_dir)
        layers = [base_dir / "tree", root / "ovl" / "lower", root / "ovl" / "upper"]
        assert _as_uid(sb.sandbox_uid(sid), layers) == []
        assert _as_uid(sb.sandbox_uid(sid), [sb._dirs(sid)["repo"]]) != []  # while its own working copy is writable
        assert manifest(base_dir) == before
    finally:
        s.sandbox.close()
        s.close()
        wait_reaped()


@requires_overlay
def test_no_mount_outlives_finish_or_close_and_a_closed_sandbox_mounts_again(cow):
    sb = cow.sandbox
    home = cow.settings.home
    done = new(cow)
    sb.finish(SandboxFinishInput(sandbox_id=done, message="x"))
    assert mounts_under(sb._dirs(done)["root"]) == []
    sid = new(cow)
    run(cow, sid, "echo kept > answer.txt")
    assert mounts_under(sb._dirs(sid)["root"]) != []
    sb.close()
    assert mounts_under(home) == []
    # a new server on the same home mounts the open sandbox again, with its episode's state
    s2 = Services.build(cow.settings)
    try:
        out = run(s2, sid, "cat answer.txt")
        assert out.stdout == "kept\n"
        reset = s2.sandbox.reset(SandboxResetInput(task_id="user/cow", sandbox_id=sid, agent_name="t"))
        assert run(s2, reset.sandbox_id, "cat answer.txt").stdout == "0\n"
    finally:
        s2.sandbox.close()
        s2.close()
    assert mounts_under(home) == []


CRASH = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from agent_rl_sandbox.schemas.tools import SandboxResetInput
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings
    home, tasks = Path(sys.argv[1]), Path(sys.argv[2])
    s = Services.build(Settings(home=home, task_dirs=(tasks,), isolation="none", working_copy="overlay"))
    kept = s.sandbox.reset(SandboxResetInput(task_id="user/cow")).sandbox_id
    stale = s.sandbox.reset(SandboxResetInput(task_id="user/cow")).sandbox_id
    s.store.sandboxes.update(stale, status="expired")  # as if it expired in another process
    from agent_rl_sandbox.tools.sandbox._overlay import quiet
    with quiet():  # the background thread holds back: the reset's old overlay stays moved aside, attached
        s.sandbox.reset(SandboxResetInput(task_id="user/cow", sandbox_id=kept))
        print(kept, stale, flush=True)
        os._exit(9)  # a crash: nothing unmounted
    """
)


@requires_overlay
def test_a_crashed_servers_stale_mounts_are_swept_at_start(open_home):
    make_task(open_home)
    home = open_home / "home"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    p = subprocess.run(
        [sys.executable, "-c", CRASH, str(home), str(open_home / "tasks")], capture_output=True, text=True, env=env
    )
    assert p.returncode == 9, p.stderr
    kept, stale = p.stdout.split()
    sandboxes = home / "sandboxes"
    assert mounts_under(sandboxes / stale) != [] and mounts_under(sandboxes / kept) != []

    def parked() -> list[Path]:
        return [p for p in mounts_under(sandboxes / kept) if any(x.startswith("trash-") for x in p.parts)]

    from agent_rl_sandbox.tools.sandbox import _overlay

    assert parked() != [] or _overlay._BENEATH_WHY is not None
    s = Services.build(Settings(home=home, task_dirs=(open_home / "tasks",), isolation="none"))
    try:
        assert mounts_under(sandboxes / stale) == []  # swept
        assert mounts_under(sandboxes / kept) != []  # an open sandbox keeps its working copy
        assert parked() == []  # but not the old overlay its last reset moved aside
        assert run(s, kept, "cat answer.txt").stdout == "0\n"
    finally:
        s.sandbox.close()
        s.close()
    for point in mounts_under(home):  # the crashed process's mounts of the open sandbox
        subprocess.run(["umount", "-l", str(point)], check=False)
    assert mounts_under(home) == []


def test_the_base_is_built_once_per_content_and_again_after_an_edit(tmp_path):
    task = make_task(tmp_path)
    cache = BaseCache(tmp_path / "bases")
    a = cache.get(task / "repo")
    assert cache.get(task / "repo") is a
    assert [p.name for p in (tmp_path / "bases").iterdir()] == [a.key]
    # the same commit as a fresh git init of a copy of the fixture (what a sandbox used to make)
    copy = tmp_path / "copy" / "repo"
    shutil.copytree(task / "repo", copy, symlinks=True)
    assert WorkingCopy(tmp_path / "copy" / "git", copy).init_from(task / "repo") == a.commit
    assert a.secrets == (".env",) and "run.sh" in a.files
    (task / "repo" / "answer.txt").write_text("1\n")
    b = cache.get(task / "repo")
    assert b.key != a.key and b.commit != a.commit and b.key == content_key(task / "repo")
    (task / "repo" / "answer.txt").write_text("0\n")  # back to the first content: its base again
    assert cache.get(task / "repo").key == a.key
    cache.close()


def test_the_copy_fallback_makes_the_same_trees(tmp_path):
    make_task(tmp_path)
    trees = {}
    for mode in ("copy", "auto"):
        s = Services.build(
            Settings(home=tmp_path / f"home-{mode}", task_dirs=(tmp_path / "tasks",), working_copy=mode)  # type: ignore[arg-type]
        )
        try:
            first = s.sandbox.reset(SandboxResetInput(task_id="user/cow"))
            run(s, first.sandbox_id, EDITS)
            again = s.sandbox.reset(SandboxResetInput(task_id="user/cow", sandbox_id=first.sandbox_id))
            state = s.sandbox.state(SandboxStateInput(sandbox_id=first.sandbox_id))
            repo = s.sandbox._dirs(first.sandbox_id)["repo"]
            trees[mode] = (
                first.base_commit,
                again.tree_hash,
                owners_as(manifest(repo), s.sandbox.sandbox_uid(first.sandbox_id)),
            )
            assert state.working_copy.startswith("copy" if mode == "copy" or OVERLAY_WHY else "overlay")
        finally:
            s.sandbox.close()
            s.close()
    assert trees["copy"] == trees["auto"]


def test_the_index_owner_rewrite_matches_git_reading_it(tmp_path):
    """``Base.index_for`` sets every entry's owner and a valid checksum: git reads it and sees the
    same entries (``ls-files -s``), and the fields hold the uid."""
    import struct

    task = make_task(tmp_path)
    base = BaseCache(tmp_path / "bases").get(task / "repo")
    data = base.index_for(4242)
    assert data[-20:] == hashlib.sha1(data[:-20]).digest()
    assert all(struct.unpack_from(">II", data, off) == (4242, 4242) for off in base.owner_offsets)
    assert len(base.owner_offsets) == len(base.files)
    git = tmp_path / "git"
    base.install_git(git, tmp_path / "work", 4242)
    wc = WorkingCopy(git, base.tree)
    assert wc.git("ls-files", "-s").decode() == WorkingCopy(base.git_dir, base.tree).git("ls-files", "-s").decode()
    assert (git / "index").read_bytes() == data

"""Issue 10 §3: resource limits hold for everything a sandbox can consume, replayed through the real
sandbox service under bubblewrap: sized ``/tmp``, a disk quota covering the working copy, the git
store and the logs, bounded finish and reset with many files, and a reset that restores exactly
the fixture whatever git state the agent leaves in the tree."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from sandbox_helpers import run, steps, write_task

from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.schemas.tools import (
    SandboxFinishInput,
    SandboxResetInput,
    SandboxStateInput,
    SandboxWriteFileInput,
)
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox._usage import scan_tree

FIXTURE = {
    "answer.txt": "0\n",
    "src/app.py": "X = 1\n",
    "src/util.py": "Y = 2\n",
    "tests/test_answer.py": "def test_ok():\n    assert True\n",
    ".gitignore": "build/\n",
}


@pytest.fixture
def make(tmp_path, bwrap_services):
    """``make(limits=..., files=...)``: services over one user task ``user/limits``; returns
    ``(services, reset_output, sandbox_root)``."""

    def build(
        limits: str = "",
        files: dict[str, str] | None = None,
        verifier: str = "grep -q 42 answer.txt",
        working_copy: str = "auto",
    ):
        task_dir = write_task(
            tmp_path / "tasks" / "lim", "user/limits", files=files or FIXTURE, limits=limits, verifier=verifier
        )
        settings = Settings(
            home=tmp_path / "home",
            isolation="bwrap",
            task_dirs=(task_dir.parent,),
            working_copy=working_copy,  # type: ignore[arg-type]
        )
        services = Services.build(settings)
        built.append(services)
        out = services.sandbox.reset(SandboxResetInput(task_id="user/limits", agent_name="test"))
        return services, out, settings.sandboxes_dir / out.sandbox_id

    built: list[Services] = []
    yield build
    for s in built:
        s.sandbox.close()
        s.close()


def tree_files(root: Path) -> dict[str, bytes | str]:
    """Every entry below ``root`` (links not followed): file bytes, ``link:<target>``, or ``dir``."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = f"link:{os.readlink(p)}"
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def reset_again(services, out):
    return services.sandbox.reset(
        SandboxResetInput(task_id="user/limits", sandbox_id=out.sandbox_id, agent_name="test")
    )


# -- /tmp and /var/tmp ---------------------------------------------------------------------------
def test_tmp_is_sized_from_memory_and_a_full_tmp_is_a_limit_hit(make):
    services, out, _root = make(limits="memory_mb = 256")
    res = run(services, out.sandbox_id, "df -Pk /tmp /var/tmp | tail -n 2")
    sizes = [int(line.split()[1]) for line in res.stdout.splitlines()]
    assert sizes == [64 * 1024, 64 * 1024], res.stdout  # memory_mb // 4 each: both together half the memory
    # many files, each under the file-size limit: the tmpfs fills, not the host's RAM (du -x: an
    # interpreter prefix under /tmp, e.g. a checkout in /tmp, is bind-mounted inside it read-only)
    res = run(
        services,
        out.sandbox_id,
        "for i in 1 2 3 4 5 6; do head -c 20M /dev/zero > /tmp/f$i || { du -skx /tmp; exit 1; }; done",
    )
    assert res.limit_hit == "tmp_space" and "No space left" in res.stderr
    assert int(res.stdout.split()[0]) <= 64 * 1024 + 64
    res = run(services, out.sandbox_id, "head -c 80M /dev/zero > /var/tmp/big")
    assert res.limit_hit in ("tmp_space", "file_size")
    assert steps(services, out.sandbox_id)[-1].outcome == "limit"


def test_tmp_larger_than_memory_is_refused():
    with pytest.raises(ValidationError, match="tmp_mb=600.*exceed memory_mb=1024"):
        Limits(memory_mb=1024, tmp_mb=600)
    assert Limits(memory_mb=1024).tmp_mb == 256


# -- git store and disk quota --------------------------------------------------------------------
def test_reset_prunes_the_git_store_round_after_round(make):
    services, out, root = make(limits="disk_mb = 200")
    baseline = scan_tree(root / "git").bytes
    for r in range(3):
        res = run(services, out.sandbox_id, f"for i in 1 2 3; do head -c 6M /dev/urandom > blob{r}_$i.bin; done")
        assert res.exit_code == 0 and res.limit_hit is None, res
        assert scan_tree(root / "git").bytes > baseline + 17 * 2**20  # the snapshot stored the blobs
        again = reset_again(services, out)
        assert again.tree_hash == out.tree_hash
        assert scan_tree(root / "git").bytes < baseline + 256 * 1024, f"round {r}: git store not pruned"


def test_disk_quota_counts_working_copy_and_refuses_writes_until_reset(make):
    services, out, _root = make(limits="disk_mb = 20")
    sid = out.sandbox_id
    res = run(services, sid, "head -c 12M /dev/zero > a.bin && head -c 12M /dev/zero > b.bin")
    assert res.limit_hit == "disk" and "further exec and writes are refused" in res.warning
    step = steps(services, sid)[-1]
    assert step.outcome == "limit" and step.extra["limit_hit"] == "disk"
    with pytest.raises(ActionError, match="over its disk limit") as e:
        run(services, sid, "rm a.bin")
    assert "sandbox_reset" in e.value.agent_text()
    with pytest.raises(ActionError, match="over its disk limit"):
        services.sandbox.write_file(SandboxWriteFileInput(sandbox_id=sid, path="x.txt", content="x"))
    assert [s.outcome for s in steps(services, sid)[-2:]] == ["refused", "refused"]
    state = services.sandbox.state(SandboxStateInput(sandbox_id=sid))  # still answers, from the last record
    assert state.status == "open"
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="filled the disk"))
    assert fin.reward == 0.0 and not fin.passed and "disk limit" in fin.verifier_output
    again = reset_again(services, out)
    assert again.tree_hash == out.tree_hash
    assert run(services, sid, "echo 42 > answer.txt").exit_code == 0


def test_disk_quota_kills_a_command_that_keeps_writing(make):
    services, out, _root = make(limits="disk_mb = 20")
    t0 = time.monotonic()
    res = run(services, out.sandbox_id, "i=0; while true; do i=$((i+1)); head -c 4M /dev/zero > f$i; sleep 0.05; done")
    assert res.limit_hit == "disk"
    assert time.monotonic() - t0 < 15  # killed by the quota watch, not by the 30 s wall limit
    assert scan_tree(_root / "repo").bytes < 300 * 2**20  # about a second of writes past the quota, not 30 s of them


def test_disk_quota_counts_the_git_store_growth(make):
    """Each write stores a new blob; the working copy stays at 1 MiB, the store is what grows."""
    services, out, _root = make(limits="disk_mb = 8")
    sid = out.sandbox_id
    hit = None
    for i in range(40):
        content = f"{i}\n" + os.urandom(450_000).hex()[:900_000]
        res = services.sandbox.write_file(SandboxWriteFileInput(sandbox_id=sid, path="data.txt", content=content))
        if res.warning and "over its disk limit" in res.warning:
            hit = i
            break
    assert hit is not None and hit >= 3, "git store growth was not counted"
    assert steps(services, sid)[-1].outcome == "limit"
    with pytest.raises(ActionError, match="over its disk limit"):
        run(services, sid, "true")
    reset_again(services, out)
    assert run(services, sid, "true").exit_code == 0


# -- many files: finish and reset bounded --------------------------------------------------------
MANY = "python3 -c \"import os\nos.makedirs('many', exist_ok=True)\nfor i in range({n}): open(f'many/f{{i}}.txt', 'w').write(str(i))\""


def test_too_many_files_is_a_limit_hit_and_finish_and_reset_stay_fast(make):
    services, out, _root = make(limits="max_changed_files = 100")
    sid = out.sandbox_id
    res = run(services, sid, MANY.format(n=3000))
    assert res.limit_hit == "files" and "files limit" in res.warning
    t0 = time.monotonic()
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="made files"))
    assert time.monotonic() - t0 < 5
    assert fin.reward == 0.0 and "files limit" in fin.verifier_output
    assert services.store.trajectories.summary(out.session_id).status == "finished"
    t0 = time.monotonic()
    again = reset_again(services, out)
    assert time.monotonic() - t0 < 5 and again.tree_hash == out.tree_hash


def test_finish_with_more_changed_files_than_the_cap_is_refused_and_recorded(make):
    files = {f"f{i:02d}.txt": "x\n" for i in range(30)} | {"answer.txt": "0\n"}
    services, out, _root = make(limits="max_changed_files = 10", files=files)
    sid = out.sandbox_id
    run(services, sid, "for f in f*.txt; do echo y > $f; done; echo 42 > answer.txt")
    with pytest.raises(ActionError, match="31 files differ from the fixture.*max_changed_files=10") as e:
        services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="done"))
    assert "sandbox_finish" in e.value.hint
    assert steps(services, sid)[-1].outcome == "refused"
    run(services, sid, "for f in f*.txt; do echo x > $f; done")
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="done"))
    assert fin.passed


def test_finish_reads_changed_files_in_one_batch(make):
    services, out, _root = make(limits="max_changed_files = 5000", verifier="test -f many/f2999.txt")
    sid = out.sandbox_id
    assert run(services, sid, MANY.format(n=3000)).limit_hit is None
    t0 = time.monotonic()
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="made files"))
    took = time.monotonic() - t0
    assert fin.verifier_exit_code == 0, fin.verifier_output
    assert took < 30, f"finish with 3,000 changed files took {took:.1f} s"


# -- reset restores exactly the fixture ----------------------------------------------------------
def test_agent_made_git_folders_are_removed_and_reset_is_exact(make):
    services, out, root = make()
    sid = out.sandbox_id
    fixture = tree_files(root / "repo")
    cmd = (
        "mkdir -p .git/hooks && printf '#!/bin/sh\\necho owned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
        " && echo 'ref: refs/heads/x' > .git/HEAD && head -c 64 /dev/urandom > .git/index"
        " && git init -q src && git -C src add -A && git -c user.name=a -c user.email=a@b -C src commit -qm x"
        " && mkdir -p nested && git init -q nested && mkdir -p .GIT && echo x > .GIT/f && echo 42 > answer.txt"
    )
    res = run(services, sid, cmd)
    assert res.exit_code == 0, res.stderr
    assert res.warning and ".git" in res.warning and "nested git repositories" in res.warning
    assert sorted(steps(services, sid)[-1].extra["removed_git_entries"]) == [".GIT", ".git", "nested/.git", "src/.git"]
    assert res.files_changed == ["answer.txt"]  # src/ stays plain files, not a gitlink
    # later commands, state and finish keep working
    assert run(services, sid, "git init -q deep/er && ls src").exit_code == 0
    assert services.sandbox.state(SandboxStateInput(sandbox_id=sid)).files_changed == ["answer.txt"]
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="answer written"))
    assert fin.passed, fin.verifier_output
    again = reset_again(services, out)
    assert again.tree_hash == out.tree_hash
    assert tree_files(root / "repo") == fixture


@pytest.mark.parametrize("working_copy", ["auto", "copy"])
def test_reset_rebuilds_a_tree_git_cannot_clean(make, working_copy):
    """What ``git clean`` leaves (a root ``.git``, a nested repository, a FIFO, an ignored file)
    planted straight into the working copy, as a crashed server might leave it: reset notices and
    rebuilds (a copy; an overlay's reset drops the whole upper layer, so there is nothing to
    notice), and the tree equals the fixture file by file."""
    services, out, root = make(working_copy=working_copy)
    repo = root / "repo"
    fixture = tree_files(repo)
    (repo / ".git" / "hooks").mkdir(parents=True)
    (repo / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ntouch /tmp/owned\n")
    (repo / "sub" / ".git").mkdir(parents=True)
    (repo / "sub" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "sub" / "kept.txt").write_text("hidden\n")
    (repo / "build").mkdir()
    (repo / "build" / "ignored.o").write_text("ignored\n")
    os.mkfifo(repo / "pipe")
    (repo / "src" / "app.py").write_text("X = 2\n")
    again = reset_again(services, out)
    assert again.tree_hash == out.tree_hash
    assert tree_files(repo) == fixture
    reset_step = steps(services, out.sandbox_id)[0]
    if services.sandbox.working_copy[0] == "copy":
        assert reset_step.extra.get("rebuilt"), reset_step.extra


def test_gitattributes_of_the_agent_change_nothing(make):
    """An agent's ``.gitattributes`` can neither break the snapshot (an encoding git cannot apply)
    nor trim the verifier's export (``export-ignore``)."""
    services, out, _root = make()
    sid = out.sandbox_id
    res = run(
        services,
        sid,
        "printf 'answer.txt export-ignore\\n*.bin working-tree-encoding=UTF-16\\n* filter=evil\\n' > .gitattributes"
        " && printf '\\xff\\xfe\\xfd' > bad.bin && echo 42 > answer.txt",
    )
    assert res.exit_code == 0 and res.limit_hit is None
    assert set(res.files_changed) == {".gitattributes", "bad.bin", "answer.txt"}
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="answer written"))
    assert fin.passed, fin.verifier_output


def test_internal_git_failure_is_recorded_and_the_episode_can_finish(make):
    """The server's git fails after a command ran (a stale ``index.lock`` appears while it runs):
    the command is recorded with its exit code and output, the trajectory still finishes (unscored),
    and reset brings the sandbox back."""
    services, out, root = make()
    sid = out.sandbox_id

    def lock_when_started() -> None:
        deadline = time.monotonic() + 20
        while not (root / "repo" / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        (root / "git" / "index.lock").write_text("")

    t = threading.Thread(target=lock_when_started)
    t.start()
    with pytest.raises(ActionError, match="internal error") as e:
        run(services, sid, "touch started; sleep 1; echo 42 > answer.txt; echo did-it")
    t.join()
    assert "sandbox_finish" in e.value.hint
    last = steps(services, sid)[-1]
    assert last.outcome == "error" and last.exit_code == 0 and "index.lock" in last.extra["internal_error"]
    assert "echo 42 > answer.txt" in last.tool_calls[0].arguments["command"]
    assert "did-it" in last.observation.results[0].content
    with pytest.raises(ActionError, match="internal error"):  # before the next command: recorded too
        run(services, sid, "true")
    assert steps(services, sid)[-1].outcome == "error"
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="done"))
    assert fin.reward == 0.0 and "internal error" in fin.verifier_output
    assert services.store.trajectories.summary(out.session_id).status == "finished"
    again = reset_again(services, out)
    assert again.tree_hash == out.tree_hash
    assert run(services, sid, "echo 42 > answer.txt").exit_code == 0


def test_write_file_into_a_git_folder_is_refused(make):
    services, out, _root = make()
    for path in (".git/config", "src/.GIT/hooks/x"):
        with pytest.raises(ActionError, match=r"\.git"):
            services.sandbox.write_file(SandboxWriteFileInput(sandbox_id=out.sandbox_id, path=path, content="x"))
    assert steps(services, out.sandbox_id)[-1].outcome == "refused"


# -- paths deeper than PATH_MAX (red team, session 3) --------------------------------------------
DEEP = """python3 -c "
import os
os.makedirs('deep', exist_ok=True); os.chdir('deep')
for i in range({levels}):
    os.makedirs('d' * 250, exist_ok=True); os.chdir('d' * 250)
for k in range({big}):
    open('big%d' % k, 'wb').write(os.urandom(2 << 20))
for k in range({small}):
    open('small%d.py' % k, 'w').write('x=%d' % k)
print('depth', len(os.getcwd()))
" """


def test_files_below_a_path_longer_than_path_max_count_against_the_quota(make):
    """A folder chain deeper than PATH_MAX (made one chdir at a time) used to hide its bytes and
    files from the quota walk and the snapshot: limit_hit null, files_changed [], finish scored."""
    services, out, root = make(limits="disk_mb = 8")
    res = run(services, out.sandbox_id, DEEP.format(levels=20, big=6, small=0))
    assert int(res.stdout.split()[-1]) > 4096, res.stdout + res.stderr  # the command really got that deep
    assert res.limit_hit == "disk", (res.limit_hit, res.warning, res.stderr)
    assert steps(services, out.sandbox_id)[-1].outcome == "limit"
    assert scan_tree(root / "repo").bytes > 8 * 2**20  # the walk sees every byte at any depth
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=out.sandbox_id, message="deep"))
    assert fin.reward == 0.0 and "disk limit" in fin.verifier_output
    again = reset_again(services, out)
    assert again.tree_hash == out.tree_hash and not (root / "repo" / "deep").exists()


def test_many_files_below_a_long_path_count_against_the_file_limit(make):
    services, out, _root = make(limits="max_changed_files = 100")
    res = run(services, out.sandbox_id, DEEP.format(levels=20, big=0, small=300))
    assert res.limit_hit == "files", (res.limit_hit, res.warning)
    assert "files limit" in res.warning


def test_a_small_file_git_cannot_record_is_a_limit_hit_not_a_silent_gap(make):
    """Within every size and count limit, one file below a path too long for git and the exports:
    the snapshot would miss it (the recorded tree differs from the real one), so the step fails
    closed instead of recording a partial tree."""
    services, out, _root = make()
    res = run(services, out.sandbox_id, DEEP.format(levels=20, big=0, small=1))
    assert res.limit_hit == "files", (res.limit_hit, res.warning, res.files_changed)
    assert "cannot record" in res.warning and "path longer than" in res.warning
    step = steps(services, out.sandbox_id)[-1]
    assert step.outcome == "limit" and step.state_ref is None
    fin = services.sandbox.finish(SandboxFinishInput(sandbox_id=out.sandbox_id, message="42"))
    assert fin.reward == 0.0 and not fin.passed


def test_scan_tree_counts_any_depth_with_few_descriptors(tmp_path, monkeypatch):
    """The walk opens folders relative to their parent: 60 levels of 250-byte names (15,000-byte
    paths) are counted in full, with descriptors held only along the current chain, all closed."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _i in range(60):
            os.mkdir("d" * 250, dir_fd=fd)
            for k in range(3):
                os.mkdir(f"side{k}", dir_fd=fd)  # siblings pending while the walk goes deeper
            nfd = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        w = os.open("f.bin", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(w, b"x" * 100_000)
        os.close(w)
    finally:
        os.close(fd)
    live: set[int] = set()
    peak = [0]
    real_open, real_close = os.open, os.close

    def counting_open(path, flags, *a, **kw):
        got = real_open(path, flags, *a, **kw)
        if flags & os.O_DIRECTORY:
            live.add(got)
            peak[0] = max(peak[0], len(live))
        return got

    def counting_close(fd):
        live.discard(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "close", counting_close)
    scan = scan_tree(tmp_path)
    assert not live and peak[0] <= 62  # every descriptor closed; never more than the chain's depth
    assert scan.files == 1 and scan.bytes >= 100_000 and not scan.cut
    assert scan.unaccounted > 0 and "path longer than" in scan.unaccounted_detail
    cut = scan_tree(tmp_path, stop_bytes=50_000)
    assert cut.cut and not live  # an early stop closes them too
    monkeypatch.undo()
    shutil.rmtree(tmp_path / ("d" * 250))
    (tmp_path / "a.txt").write_text("a")
    assert scan_tree(tmp_path).files == 1 and scan_tree(tmp_path).unaccounted == 0


# -- the server's own test run (red team, session 3) ---------------------------------------------
TEST_RUN_REWARD = """
[reward]
aggregation = "all"
[[reward.criteria]]
id = "ran_the_tests"
type = "test_run"
"""

FILLER_TEST = """import os
import time


def test_fill():
    if "/trusted-" not in os.getcwd():
        return  # the agent's own run: behave
    for k in range(8):
        with open("fill%d.bin" % k, "wb") as f:
            f.write(os.urandom(2 << 20))
    time.sleep(30)  # only the quota watch ends this before the wall limit
"""


def test_the_servers_test_run_has_the_disk_quota(tmp_path, bwrap_services):
    """A test that writes only inside the server's run (it can tell that run from the agent's by its
    cwd) filled the run's tree on the host with no limit hit; now the run is watched against the
    task's disk_mb, killed, its result is ``none`` and the step records the limit."""
    task_dir = write_task(
        tmp_path / "tasks" / "trq",
        "user/trusted-quota",
        files={**FIXTURE, "tests/test_fill.py": FILLER_TEST},
        limits="disk_mb = 8",
        reward=TEST_RUN_REWARD,
    )
    settings = Settings(home=tmp_path / "home", isolation="bwrap", task_dirs=(task_dir.parent,))
    services = Services.build(settings)
    try:
        out = services.sandbox.reset(SandboxResetInput(task_id="user/trusted-quota", agent_name="test"))
        t0 = time.monotonic()
        res = run(services, out.sandbox_id, "python -m pytest -q tests/test_fill.py")
        assert time.monotonic() - t0 < 20  # killed by the quota watch, not the 30 s wall limit
        assert res.exit_code == 0, res.stdout + res.stderr
        step = steps(services, out.sandbox_id)[-1]
        trusted = step.extra["trusted_run"]
        assert trusted["result"] == "none" and trusted["limit_hit"] == "disk", trusted  # not wall_time
        assert res.limit_hit == "disk" and step.extra["limit_hit"] == "disk" and step.outcome == "limit"
        assert "server's test run" in res.warning
        with pytest.raises(ActionError, match="over its disk limit"):
            run(services, out.sandbox_id, "true")
        root = settings.sandboxes_dir / out.sandbox_id
        assert not list(root.glob("trusted-*"))  # the run's folder is gone
    finally:
        services.sandbox.close()
        services.close()

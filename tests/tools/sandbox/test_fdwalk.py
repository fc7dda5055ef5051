"""The folder walk by descriptors that the quota and the secret-file watch share (``_fdwalk``)."""

from __future__ import annotations

import os

import pytest
from sandbox_helpers import as_nobody

from agent_rl_sandbox.tools.sandbox._fdwalk import open_folder, walk_fd
from agent_rl_sandbox.tools.sandbox._secret_watch import _walk
from agent_rl_sandbox.tools.sandbox._usage import scan_tree


def _tree(root):
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("f")
    (root / "a" / ".env").write_text("A=b\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "top.txt").write_text("t")
    (root / "link").symlink_to("a")  # never followed
    os.mkfifo(root / "pipe")


def test_every_entry_once_folders_first_links_not_followed_descend_refused(tmp_path):
    _tree(tmp_path)
    seen = [(rel, e.is_dir(follow_symlinks=False)) for rel, e, _fd in walk_fd(open_folder(tmp_path))]
    rels = [r for r, _ in seen]
    assert sorted(rels) == sorted(
        ["a", "a/b", "a/b/f.txt", "a/.env", ".git", ".git/HEAD", "top.txt", "link", "pipe"]
    ) and len(rels) == len(set(rels))
    assert rels.index("a") < rels.index("a/b") < rels.index("a/b/f.txt")
    assert "link/b" not in rels
    refused = [rel for rel, _e, _fd in walk_fd(open_folder(tmp_path), descend=lambda name: name != ".git")]
    assert ".git" in refused and ".git/HEAD" not in refused and "a/b/f.txt" in refused


def test_both_users_see_the_same_tree_through_it(tmp_path):
    """The quota counts what the walk yields (files, bytes, ``.git`` entries not walked into);
    the secret watch takes its regular files, with the inode the directory entry gives."""
    _tree(tmp_path)
    scan = scan_tree(tmp_path)
    assert scan.git_entries == (".git",) and scan.unaccounted == 0 and not scan.cut
    assert scan.files == 5  # f.txt, .env, top.txt, link, pipe; the .git folder is not walked into
    files = {rel: key for rel, key, _fd, _name in _walk(tmp_path)}
    assert set(files) == {"a/b/f.txt", "a/.env", ".git/HEAD", "top.txt"}
    assert files["a/.env"] == (os.lstat(tmp_path).st_dev, os.lstat(tmp_path / "a" / ".env").st_ino)


def test_any_depth_few_descriptors_all_closed_early_stop_too(tmp_path):
    """A chain of 40 folders of 250-byte names (a 10,000-byte path, past PATH_MAX) is walked in
    full; at most the chain's descriptors are open at once, and none once the walk ends or is
    closed part way."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(40):
        os.mkdir("d" * 250, dir_fd=fd)
        os.mkdir("side", dir_fd=fd)
        nfd = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    before = set(os.listdir("/proc/self/fd"))
    peak = 0
    deepest = ""
    for rel, _e, dir_fd in walk_fd(open_folder(tmp_path)):
        peak = max(peak, len(os.listdir("/proc/self/fd")) - len(before))
        if rel.endswith("deep.txt"):
            deepest = rel
            assert os.stat("deep.txt", dir_fd=dir_fd, follow_symlinks=False)  # named by its folder's descriptor
    assert len(os.fsencode(deepest)) > 10_000 and peak <= 42
    assert set(os.listdir("/proc/self/fd")) == before
    walk = walk_fd(open_folder(tmp_path))
    next(walk)
    next(walk)
    walk.close()
    assert set(os.listdir("/proc/self/fd")) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to nobody in a child")
def test_a_folder_it_cannot_read_is_a_problem_passed_over(open_home):
    """A folder the walker may not open (mode 000, walked as ``nobody``) is named in one problem
    sentence and passed over; the rest is walked."""
    (open_home / "locked").mkdir()
    (open_home / "locked" / "x").write_text("x")
    (open_home / "ok.txt").write_text("o")
    (open_home / "locked").chmod(0)

    def walk() -> list:
        problems: list[str] = []
        rels = [rel for rel, _e, _fd in walk_fd(open_folder(open_home), problems.append)]
        return [rels, problems]

    rels, problems = as_nobody(walk)
    (open_home / "locked").chmod(0o755)
    assert sorted(rels) == ["locked", "ok.txt"]
    assert problems == ["locked: cannot open (Permission denied)"]

"""Reading sandbox files as the server (root): no link is followed at any component, only regular
files are read, sizes and time are capped; and the verifier's tree export ignores git attributes."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from sandbox_helpers import write_task

from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox._export import TreeView
from agent_rl_sandbox.tools.sandbox._git import WorkingCopy
from agent_rl_sandbox.tools.sandbox._safe_read import UnsafeRead, open_beneath, read_beneath


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "sandbox"
    (r / "logs").mkdir(parents=True)
    (r / "logs" / "report.json").write_text('{"ok": true}')
    return r


def test_a_regular_file_is_read(root):
    assert read_beneath(root, "logs/report.json") == b'{"ok": true}'


@pytest.mark.parametrize(
    ("make", "rel", "says"),
    [
        (lambda r: (r / "logs" / "shadow").symlink_to("/etc/shadow"), "logs/shadow", "symlink"),
        (lambda r: (r / "logs" / "zero").symlink_to("/dev/zero"), "logs/zero", "symlink"),
        (lambda r: (r / "etc").symlink_to("/etc"), "etc/shadow", "symlink or not a folder"),
        (lambda r: (r / "inner").symlink_to(r / "logs"), "inner/report.json", "symlink or not a folder"),
        (lambda r: os.mkfifo(r / "logs" / "fifo"), "logs/fifo", "a FIFO"),
        (lambda r: (r / "logs" / "dir").mkdir(), "logs/dir", "a folder"),
        (lambda r: os.link(r / "logs" / "report.json", r / "logs" / "hard"), "logs/hard", "hard links"),
        (lambda r: None, "logs/missing", "no such file"),
        (lambda r: None, "../etc/passwd", "without `..`"),
        (lambda r: None, "/etc/passwd", "relative path"),
    ],
    ids=[
        "link-to-shadow",
        "link-to-dev-zero",
        "linked-folder-outside",
        "linked-folder-inside",
        "fifo",
        "folder",
        "hard-link",
        "missing",
        "dotdot",
        "absolute",
    ],
)
def test_unsafe_targets_are_refused_with_a_reason(root, make, rel, says):
    make(root)
    t0 = time.monotonic()
    with pytest.raises(UnsafeRead, match=says):
        read_beneath(root, rel)
    assert time.monotonic() - t0 < 2, "a refusal never waits (a FIFO must not block the open)"


def test_a_device_itself_is_refused():
    with pytest.raises(UnsafeRead, match="a device"):
        read_beneath(__import__("pathlib").Path("/dev"), "zero")


def test_size_cap(root):
    (root / "logs" / "big").write_bytes(b"x" * 5000)
    with pytest.raises(UnsafeRead, match="over the 4096-byte limit"):
        read_beneath(root, "logs/big", max_bytes=4096)
    with open_beneath(root, "logs/big") as fd:
        assert os.fstat(fd).st_size == 5000


# -- legacy shell verifiers: their report is swapped by the code they run ------------------------------


@pytest.mark.parametrize(
    "swap",
    [
        'ln -sf /etc/shadow "$VERIFIER_LOGS/junit.xml"',
        'ln -sf /dev/zero "$VERIFIER_LOGS/junit.xml"',
        'mkfifo "$VERIFIER_LOGS/junit.xml"',
        'head -c 9000000 /dev/zero > "$VERIFIER_LOGS/junit.xml"',
    ],
    ids=["symlink-to-shadow", "symlink-to-dev-zero", "fifo", "oversized"],
)
def test_a_swapped_report_is_refused_quickly(tmp_path, swap):
    write_task(tmp_path / "tasks" / "swap", "user/swap", verifier=f"# --junitxml\n{swap}\nexit 0")
    s = Services.build(Settings(home=tmp_path / "home", task_dirs=(tmp_path / "tasks",)))
    try:
        r = s.sandbox.reset(io.SandboxResetInput(task_id="user/swap", agent_name="red-team"))
        t0 = time.monotonic()
        out = s.sandbox.finish(io.SandboxFinishInput(sandbox_id=r.sandbox_id, message="done"))
        assert time.monotonic() - t0 < 10, "reading the report must never hang"
        assert out.verifier_exit_code == 1 and not out.passed, out.verifier_output
        assert any(w in out.verifier_output for w in ("symlink", "FIFO", "limit")), out.verifier_output
        assert "root:" not in out.verifier_output
        assert "not a trusted verdict" in out.verifier_output
    finally:
        s.sandbox.close()
        s.close()


# -- the tree export ---------------------------------------------------------------------------------


def test_export_ignores_every_git_attribute(tmp_path):
    """``export-ignore``, ``export-subst``, ``eol``, ``ident`` and filters in an agent-made
    ``.gitattributes`` change nothing: the export holds every entry's exact blob bytes."""
    work = tmp_path / "work"
    (work / "hidden").mkdir(parents=True)
    files = {
        ".gitattributes": "hidden/** export-ignore\nsubst.txt export-subst\n*.txt eol=crlf\nident.py ident\n* filter=evil\n",
        "hidden/receipt.json": '{"deployed": true}\n',
        "subst.txt": "commit $Format:%H$\nline two\n",
        "ident.py": "# $Id$\nx = 1\n",
        "run.sh": "#!/bin/sh\necho hi\n",
    }
    for rel, text in files.items():
        (work / rel).write_text(text)
    (work / "run.sh").chmod(0o755)
    (work / "link").symlink_to("run.sh")
    wc = WorkingCopy(tmp_path / "git", work)
    subprocess.run(["git", "init", "-q"], env={"GIT_DIR": str(tmp_path / "git"), "PATH": "/usr/bin:/bin"}, check=True)
    tree = wc.snapshot()
    view = TreeView(tmp_path / "git", tree)
    dest = tmp_path / "export"
    assert view.export(dest) == len(files)
    for rel, text in files.items():
        assert (dest / rel).read_bytes() == text.encode(), rel
        assert view.read(rel) == text.encode()
    assert os.stat(dest / "run.sh").st_mode & 0o777 == 0o755
    assert os.stat(dest / "subst.txt").st_mode & 0o777 == 0o644
    assert os.readlink(dest / "link") == "run.sh" and not view.is_file("link") and view.exists("link")
    assert view.exists("hidden") and not view.exists("nothing")

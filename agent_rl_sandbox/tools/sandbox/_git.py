"""The sandbox working copy as a git repository whose git dir lives outside the working tree.

Keeping ``GIT_DIR`` outside the folder the agent can write means nothing the agent does can rewrite
history, the index or the base commit that diffs are taken against. Commits use a fixed author,
committer and date, so the same fixture always gives the same commit and tree hash.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FIXED_ENV = {
    "GIT_AUTHOR_NAME": "agent-rl-sandbox",
    "GIT_AUTHOR_EMAIL": "fixture@agent-rl-sandbox.invalid",
    "GIT_COMMITTER_NAME": "agent-rl-sandbox",
    "GIT_COMMITTER_EMAIL": "fixture@agent-rl-sandbox.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}

# Caches that tools write as a side effect; never counted as edits.
IGNORED = "__pycache__/\n*.pyc\n.pytest_cache/\n.mypy_cache/\n.ruff_cache/\n"
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def is_cache(path: str) -> bool:
    """True for files inside a tool cache folder (never treated as an edit; the verifier ignores
    them: it reads bytecode from a fresh cache)."""
    return any(part in CACHE_DIRS for part in path.split("/")[:-1])


class GitError(RuntimeError):
    """A git command failed; the message carries git's stderr."""


class WorkingCopy:
    """Git operations on ``work_tree`` with its repository in ``git_dir``."""

    def __init__(self, git_dir: Path, work_tree: Path):
        self.git_dir = git_dir
        self.work_tree = work_tree

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        """Run ``git`` with this repo's dirs; returns stdout. Raises :class:`GitError` on failure."""
        env = {**FIXED_ENV, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree)}
        p = subprocess.run(["git", *args], env=env, cwd=self.git_dir.parent, capture_output=True, input=input)
        if p.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed: {p.stderr.decode(errors='replace').strip()[:500]}")
        return p.stdout

    def init_from(self, fixture: Path) -> str:
        """Initialise from the current contents of ``work_tree`` (already copied from ``fixture``)
        and commit them as the base commit; returns its hash."""
        self.git("init", "-q", "-b", "base")
        (self.git_dir / "info").mkdir(parents=True, exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text(IGNORED)
        self.git("config", "core.autocrlf", "false")
        self.git("config", "core.fileMode", "true")
        self.git("add", "-A", "--force")  # every fixture file, even one its own .gitignore names
        self.git("commit", "-q", "--no-verify", "-m", f"fixture {fixture.name}")
        return self.git("rev-parse", "HEAD").decode().strip()

    def snapshot(self) -> str:
        """Stage the working tree and return its tree hash (cost grows with what changed).

        Files that ``.gitignore`` rules hide are staged too, except tool caches (:data:`CACHE_DIRS`):
        otherwise an agent could write a self-ignoring ``.gitignore`` or a sourceless ``.pyc`` and
        change what the code does with no diff, no claim and no trace in the tree."""
        self.git("add", "-A")
        out = self.git("ls-files", "-z", "--others", "--ignored", "--exclude-standard")
        hidden = [p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p and not is_cache(p)]
        for i in range(0, len(hidden), 500):
            self.git("add", "-f", "--", *hidden[i : i + 500])
        return self.git("write-tree").decode().strip()

    def changed_between(self, tree_a: str, tree_b: str) -> list[str]:
        """Paths that differ between two trees, sorted."""
        if tree_a == tree_b:
            return []
        out = self.git("diff", "--name-only", "--no-renames", "-z", tree_a, tree_b)
        return sorted(p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p)

    def base_tree(self, base_commit: str) -> str:
        return self.git("rev-parse", f"{base_commit}^{{tree}}").decode().strip()

    def diff_stat(self, base_commit: str, tree: str) -> str:
        return self.git("diff", "--stat", "--no-renames", base_commit, tree).decode(errors="replace")

    def read_blob(self, tree: str, path: str) -> bytes | None:
        """Bytes of ``path`` in ``tree``, or ``None`` when absent."""
        try:
            return self.git("cat-file", "blob", f"{tree}:{path}")
        except GitError:
            return None

    def reset_to(self, base_commit: str) -> list[str]:
        """Return the working tree to ``base_commit``: restore changed files, delete new ones
        (ignored caches included). Work is proportional to what changed (plus one ``lstat`` per
        tracked file, which git needs to notice changes). Returns the paths git restored (files
        that differed from the base and exist again), so the caller can fix their ownership."""
        base_tree = self.base_tree(base_commit)
        changed = self.changed_between(base_tree, self.snapshot()) if self.work_tree.is_dir() else None
        self.work_tree.mkdir(parents=True, exist_ok=True)
        self.git("reset", "-q", "--hard", base_commit)
        self.git("clean", "-q", "-f", "-d", "-x")
        if changed is None:  # the working copy was removed (finished sandbox): all of it is new
            changed = [p for p in self.git("ls-files", "-z").decode("utf-8", "surrogateescape").split("\0") if p]
        return [p for p in changed if (self.work_tree / p).exists() or (self.work_tree / p).is_symlink()]

"""The sandbox working copy as a git repository whose git dir lives outside the working tree.

Keeping ``GIT_DIR`` outside the folder the agent can write means nothing the agent does can rewrite
history, the index or the base commit that diffs are taken against. Commits use a fixed author,
committer and date, so the same fixture always gives the same commit and tree hash.

Nothing in the working tree may change how the server's git behaves (issue 10 §3):

- every call names ``--git-dir`` and ``--work-tree`` and runs with no system or global config,
  ``core.hooksPath=/dev/null`` and no fsmonitor, so no hook or helper ever runs;
- ``info/attributes`` (which outranks every ``.gitattributes``) unsets the attributes that make
  git transform content (``text``/``eol``, ``filter``, ``ident``, ``working-tree-encoding``) or
  trim an archive (``export-ignore``, ``export-subst``): an agent's ``.gitattributes`` is a plain
  file, and what is stored and exported is the bytes on disk;
- entries named ``.git`` (any case) cannot be stored in git at all and a folder holding one turns
  into a gitlink, so they are removed from the working tree before every snapshot
  (:func:`remove_git_entries`; the caller records what was removed); NTFS/HFS name protection is
  off, so names such as ``git~1`` are plain names on this Linux-only server;
- :meth:`WorkingCopy.reset_to` checks the whole tree against the base commit afterwards and
  rebuilds it from scratch on any mismatch, and prunes objects nothing points at.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterable
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
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}

SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.excludesFile=/dev/null",
    "core.attributesFile=/dev/null",
    "core.protectNTFS=false",
    "core.protectHFS=false",
    "core.symlinks=true",
    "gc.auto=0",
    "core.logAllRefUpdates=false",
)
"""``-c`` options on every git call (they outrank the repository's own config)."""

NEUTRAL_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding -export-ignore -export-subst\n"
"""``info/attributes``: git stores and exports the working tree's bytes as they are."""

# Caches that tools write as a side effect; never counted as edits.
IGNORED = "__pycache__/\n*.pyc\n.pytest_cache/\n.mypy_cache/\n.ruff_cache/\n"
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def is_cache(path: str) -> bool:
    """True for files inside a tool cache folder (never treated as an edit; the verifier ignores
    them: it reads bytecode from a fresh cache)."""
    return any(part in CACHE_DIRS for part in path.split("/")[:-1])


def is_git_name(name: str) -> bool:
    """Whether git refuses to store an entry of this name (``.git`` in any case)."""
    return name.lower() == ".git"


def remove_git_entries(root: Path, found: list[str]) -> list[str]:
    """Delete the entries ``found`` (paths relative to ``root`` whose last part is a ``.git`` name,
    from :func:`agent_rl_sandbox.tools.sandbox._usage.scan_tree`) without following links; returns
    those removed, sorted."""
    removed = []
    for rel in sorted(found):
        p = root / rel
        try:
            if stat.S_ISDIR(os.lstat(p).st_mode):
                shutil.rmtree(p)
            else:
                os.unlink(p)
            removed.append(rel)
        except FileNotFoundError:
            continue
    return removed


_MISS = object()


class GitError(RuntimeError):
    """A git command failed; the message carries git's stderr."""


class WorkingCopy:
    """Git operations on ``work_tree`` with its repository in ``git_dir``.

    Holds at most one ``git cat-file --batch`` process (started by :meth:`read_blob`); call
    :meth:`close` when done reading."""

    def __init__(self, git_dir: Path, work_tree: Path):
        self.git_dir = git_dir
        self.work_tree = work_tree
        self._batch: subprocess.Popen | None = None
        self._cache: dict[tuple[str, str], bytes | None] = {}

    def _argv(self, *args: str) -> list[str]:
        argv = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}"]
        for opt in SAFE_CONFIG:
            argv += ["-c", opt]
        return argv + list(args)

    def git(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
        """Run ``git`` with this repo's dirs (and ``env`` on top of :data:`FIXED_ENV`); returns
        stdout. Raises :class:`GitError` on failure."""
        p = subprocess.run(
            self._argv(*args),
            env={**FIXED_ENV, **(env or {})},
            cwd=self.git_dir.parent,
            capture_output=True,
            input=input,
        )
        if p.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed: {p.stderr.decode(errors='replace').strip()[:500]}")
        return p.stdout

    def init_from(self, fixture: Path) -> str:
        """Initialise from the current contents of ``work_tree`` (already copied from ``fixture``)
        and commit them as the base commit; returns its hash."""
        self.git("init", "-q", "-b", "base")
        (self.git_dir / "info").mkdir(parents=True, exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text(IGNORED)
        (self.git_dir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES)
        shutil.rmtree(self.git_dir / "hooks", ignore_errors=True)
        for key, value in (
            ("core.autocrlf", "false"),
            ("core.fileMode", "true"),
            ("gc.auto", "0"),
            ("core.logAllRefUpdates", "false"),
        ):
            self.git("config", key, value)
        self.git("add", "-A", "--force")  # every fixture file, even one its own .gitignore names
        self.git("commit", "-q", "--no-verify", "-m", f"fixture {fixture.name}")
        # one pack for the base: later snapshots are the only loose objects, so measuring and
        # pruning the store costs what the episode stored, not the fixture's size
        self.git("repack", "-a", "-d", "-q")
        return self.git("rev-parse", "HEAD").decode().strip()

    def snapshot(self) -> str:
        """Stage the working tree and return its tree hash (cost grows with what changed).

        Files that ``.gitignore`` rules hide are staged too, except tool caches (:data:`CACHE_DIRS`):
        otherwise an agent could write a self-ignoring ``.gitignore`` or a sourceless ``.pyc`` and
        change what the code does with no diff, no claim and no trace in the tree. The caller
        removes ``.git`` entries first (:func:`remove_git_entries`); one left makes this raise."""
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
        """Bytes of ``path`` in ``tree``, or ``None`` when absent or not a file. All reads share
        one ``git cat-file --batch`` process (one round trip each, not one process each)."""
        cached = self._cache.get((tree, path), _MISS)
        if cached is not _MISS:
            return cached  # type: ignore[return-value]  # _MISS is the only non-bytes value stored
        if "\n" in path or "\r" in path:  # the batch protocol is line-based
            try:
                return self.git("cat-file", "blob", f"{tree}:{path}")
            except GitError:
                return None
        if self._batch is None or self._batch.poll() is not None:
            self._batch = subprocess.Popen(
                self._argv("cat-file", "--batch"),
                env=FIXED_ENV,
                cwd=self.git_dir.parent,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        proc = self._batch
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(f"{tree}:{path}\n".encode("utf-8", "surrogateescape"))
            proc.stdin.flush()
            header = proc.stdout.readline().split()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise GitError(f"git cat-file --batch failed: {e}") from None
        if len(header) != 3:  # "<name> missing" / "ambiguous"
            return None
        size = int(header[2])
        data = proc.stdout.read(size + 1)[:size]
        return data if header[1] == b"blob" else None

    def prefetch(self, tree: str, paths: Iterable[str], max_bytes: int = 64 * 1024 * 1024) -> None:
        """Read the blobs of ``paths`` in ``tree`` in one pipelined ``git cat-file --batch`` run
        (requests written by a thread while answers are read, no round trip each), keeping them for
        the next :meth:`read_blob` of each until ``max_bytes`` are held; the rest are read on demand."""
        wanted = [p for p in dict.fromkeys(paths) if "\n" not in p and "\r" not in p]
        if not wanted:
            return
        proc = subprocess.Popen(
            self._argv("cat-file", "--batch", "--buffer"),
            env=FIXED_ENV,
            cwd=self.git_dir.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdin = proc.stdin

        def feed() -> None:
            try:
                for p in wanted:
                    stdin.write(f"{tree}:{p}\n".encode("utf-8", "surrogateescape"))
                stdin.close()
            except OSError:
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        held = 0
        try:
            for p in wanted:
                header = proc.stdout.readline().split()
                if not header:
                    break
                if len(header) != 3:
                    self._cache[(tree, p)] = None
                    continue
                size = int(header[2])
                if header[1] == b"blob" and held + size <= max_bytes:
                    self._cache[(tree, p)] = proc.stdout.read(size + 1)[:size]
                    held += size
                elif header[1] != b"blob":
                    self._cache[(tree, p)] = None
                    proc.stdout.read(size + 1)
                else:  # over the memory bound: skip its bytes, read again on demand
                    remaining = size + 1
                    while remaining:
                        chunk = proc.stdout.read(min(remaining, 1 << 20))
                        if not chunk:
                            break
                        remaining -= len(chunk)
        finally:
            proc.stdout.close()
            proc.kill()
            proc.wait()
            writer.join()

    def close(self) -> None:
        """Stop the ``cat-file --batch`` process, if one runs, and drop prefetched blobs."""
        self._cache.clear()
        proc, self._batch = self._batch, None
        if proc is not None:
            for f in (proc.stdin, proc.stdout):
                if f is not None:
                    f.close()
            proc.wait()

    def __del__(self) -> None:  # a reader left open by an exception path
        try:
            self.close()
        except Exception:
            pass

    def tracked(self, commit: str) -> dict[str, str]:
        """``path -> mode`` (``100644``, ``100755``, ``120000``...) of every entry of ``commit``."""
        out = self.git("ls-tree", "-r", "-z", "--full-tree", commit)
        rows = {}
        for rec in out.decode("utf-8", "surrogateescape").split("\0"):
            if rec:
                meta, path = rec.split("\t", 1)
                rows[path] = meta.split()[0]
        return rows

    def mismatches(self, commit: str, limit: int = 20) -> list[str]:
        """How the working tree differs from ``commit`` in what exists and its kind: entries that
        should not be there (untracked, ignored, ``.git`` folders, nested repositories, FIFOs),
        missing files, a file where a link belongs. Content and the executable bit are git's to
        check (``reset --hard`` rewrites every file whose stat data changed; ctime cannot be
        forged). One ``readdir`` per folder, no ``stat`` per file. Returns at most ``limit``
        descriptions; empty when it matches."""
        want = self.tracked(commit)
        dirs = {str(Path(p).parent) for p in want} | {"."}
        for d in list(dirs):
            dirs.update(str(a) for a in Path(d).parents)
        found: list[str] = []
        seen = 0
        stack = [""]
        while stack and len(found) < limit:
            rel_dir = stack.pop()
            try:
                entries = list(os.scandir(self.work_tree / rel_dir if rel_dir else self.work_tree))
            except OSError as e:
                found.append(f"{rel_dir or '.'}: cannot list ({e.strerror})")
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                mode = want.get(rel)
                if entry.is_dir(follow_symlinks=False) and mode is None:
                    if rel in dirs:
                        stack.append(rel)
                    else:
                        found.append(f"{rel}/: not in the fixture")
                    continue
                seen += mode is not None
                if mode is None:
                    found.append(f"{rel}: not in the fixture")
                elif mode == "120000":
                    if not entry.is_symlink():
                        found.append(f"{rel}: should be a symlink")
                elif mode in ("100644", "100755"):
                    if not entry.is_file(follow_symlinks=False):
                        found.append(f"{rel}: should be a regular file")
                else:
                    found.append(f"{rel}: unexpected entry of mode {mode} in the fixture")
        if not found and seen != len(want):
            found.append(f"{len(want) - seen} fixture file(s) missing")
        return found[:limit]

    def reset_to(self, base_commit: str) -> list[str]:
        """Return the working tree to exactly ``base_commit`` and drop every object nothing points
        at (what earlier snapshots stored; :meth:`pin` keeps a finished episode's final tree).

        ``git reset --hard`` plus ``git clean -ffdx`` do the work in proportion to what changed;
        then :meth:`mismatches` compares the whole tree with the base (ignored files, ``.git``
        folders and nested repositories included), and on any difference, or if git itself fails
        on what the agent left, the working tree is deleted and checked out from scratch.
        Returns the differences that forced a rebuild (empty when none did). Raises
        :class:`GitError` only if the rebuilt tree still differs."""
        problems: list[str] = []
        (self.git_dir / "index.lock").unlink(missing_ok=True)
        if self.work_tree.is_dir() and not self.work_tree.is_symlink():
            try:
                self.git("reset", "-q", "--hard", base_commit)
                self.git("clean", "-q", "-ffdx")
                problems = self.mismatches(base_commit)
            except GitError as e:
                problems = [str(e)]
        else:
            problems = ["the working copy was removed"]
        if problems:
            if self.work_tree.is_symlink() or self.work_tree.is_file():
                self.work_tree.unlink()
            shutil.rmtree(self.work_tree, ignore_errors=True)
            self.work_tree.mkdir(parents=True)
            (self.git_dir / "index").unlink(missing_ok=True)
            self.git("reset", "-q", "--hard", base_commit)
            left = self.mismatches(base_commit)
            if left:
                raise GitError(f"rebuilt working copy still differs from {base_commit[:12]}: {left[:5]}")
        self.prune()
        return problems if problems != ["the working copy was removed"] else []

    def restore(self, base_commit: str, fixture: Path) -> tuple[str, list[str]]:
        """:meth:`reset_to` ``base_commit``; if git fails even on a rebuilt working tree, rebuild
        the whole store from ``fixture`` (a fresh ``git init``: the same fixture gives the same
        base commit; pinned trees are lost). Returns ``(base_commit, what forced a rebuild)``."""
        try:
            return base_commit, self.reset_to(base_commit)
        except GitError as e:
            self.close()
            shutil.rmtree(self.git_dir, ignore_errors=True)
            shutil.rmtree(self.work_tree, ignore_errors=True)
            shutil.copytree(
                fixture,
                self.work_tree,
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"),
            )
            return self.init_from(fixture), [f"git store rebuilt: {e}"]

    def prune(self) -> None:
        """Delete loose objects that no ref, ``HEAD`` or the index reaches (skipped when there are
        none: the base lives in a pack)."""
        objects = self.git_dir / "objects"
        if not any(d.is_dir() and len(d.name) == 2 and any(d.iterdir()) for d in objects.iterdir()):
            return
        if (self.git_dir / "logs").exists():
            self.git("reflog", "expire", "--expire=now", "--all")
        self.git("prune", "--expire=now")

    def pin(self, ref: str, tree: str, parent: str) -> str:
        """Keep ``tree`` (and its blobs) through later :meth:`prune` calls: a commit of it on
        ``parent`` under ``refs/<ref>``. Returns the commit hash."""
        commit = self.git("commit-tree", tree, "-p", parent, "-m", ref).decode().strip()
        self.git("update-ref", f"refs/{ref}", commit)
        return commit

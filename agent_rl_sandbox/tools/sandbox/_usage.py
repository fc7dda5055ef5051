"""What a sandbox holds on disk, against its quota (``Limits.disk_mb``, ``Limits.max_changed_files``).

The quota covers everything an episode can make the server store: the working copy, the growth of
the sandbox's git store since the last reset (every snapshot stores the blobs of what changed) and
its logs (kept command output). :class:`Budget` measures it

- while a command runs (:meth:`Budget.watch`, called by the runner about once a second): a working
  copy over the quota or over the file limit kills the command, so one command cannot fill the
  host's disk before the check after it;
- after every command and write (:meth:`Budget.settle`): ``.git`` entries are removed first (git
  cannot store them and they would break the snapshot), then the working copy is counted, and only
  when it is within the limits is it snapshotted and the total (with the git store and logs)
  counted.

The walk (:func:`scan_tree`, by :func:`._fdwalk.walk_fd`) opens each folder relative to its
parent's descriptor, so a folder chain deeper than ``PATH_MAX`` hides nothing from the count; an entry the server cannot account
for (a path longer than :data:`MAX_PATH_BYTES`, which git could not record, or one it cannot read)
is a ``files`` limit hit and is never snapshotted, so the recorded tree is never a partial view of
the real one (red team, session 3: 600 MB and 3,000 files below a 10,000-byte path went uncounted,
unrecorded, and the episode scored normally).

Going over is recorded in ``<sandbox>/usage.json`` (server-owned, outside the working copy); while
it is there every exec and write is refused, until ``sandbox_reset`` prunes the git store and
starts a new record (:meth:`Budget.start`). Sizes count what a file occupies or claims, whichever
is larger (``max(st_size, st_blocks * 512)``), so sparse files count at their length.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.tools.sandbox._fdwalk import open_folder, walk_fd
from agent_rl_sandbox.tools.sandbox._git import WorkingCopy, is_git_name, remove_git_entries

MIB = 1024 * 1024


MAX_PATH_BYTES = 3072
"""Longest path (bytes, relative to the working copy) the server records. Linux refuses paths of
``PATH_MAX`` (4096) bytes or more, and git and the server's own file handling name entries by their
path below a host folder (the working copy, a trusted run's or the verifier's export): a deeper
entry could not be stored, exported or checked. The walk reports it (:attr:`TreeScan.unaccounted`)
and the quota treats that as a ``files`` limit hit (fail closed)."""


@dataclass(frozen=True)
class TreeScan:
    """One walk of a folder (links not followed)."""

    bytes: int
    """Bytes of every entry below the folder (folders included)."""
    files: int
    """Entries that are not folders."""
    git_entries: tuple[str, ...] = ()
    """Paths (relative) of entries named ``.git`` in any case; not descended into."""
    cut: bool = False
    """The walk stopped early at ``stop_bytes`` or ``stop_files``: the counts are lower bounds."""
    unaccounted: int = 0
    """Entries the server cannot account for: a path longer than :data:`MAX_PATH_BYTES` (still
    walked and counted: depth hides nothing from the walk, but git could not record it), or a
    folder or entry that could not be opened, listed or stat'ed (other than vanishing)."""
    unaccounted_detail: str = ""
    """What the first unaccounted entry was (for the limit's message)."""


def scan_tree(root: Path, *, stop_bytes: int | None = None, stop_files: int | None = None) -> TreeScan:
    """Walk ``root`` without following links, each folder opened relative to its parent's
    descriptor (:func:`._fdwalk.walk_fd`), so no path length limits the walk: every byte and file
    is counted at any depth. Entries vanishing mid-walk are skipped; any other failure to open,
    list or stat an entry, and every path longer than :data:`MAX_PATH_BYTES`, is counted in
    ``unaccounted``. Stops early once ``stop_bytes`` or ``stop_files`` is passed (``cut``).
    Descriptors held at once: at most the depth of the folder being listed. A missing ``root``
    scans as empty."""
    total = files = 0
    problems: list[str] = []
    gits: list[str] = []
    try:
        top = open_folder(root)
    except FileNotFoundError:
        return TreeScan(0, 0)
    except OSError as e:
        return TreeScan(0, 0, unaccounted=1, unaccounted_detail=f".: cannot open ({e.strerror})")
    walk = walk_fd(top, problems.append, descend=lambda name: not is_git_name(name))
    try:
        for rel, entry, _fd in walk:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as err:
                problems.append(f"{rel[:120]}: cannot stat ({err.strerror})")
                continue
            size = len(os.fsencode(rel))
            too_long = size > MAX_PATH_BYTES
            if too_long:
                problems.append(f"{rel[:60]}... ({size} bytes): path longer than {MAX_PATH_BYTES} bytes")
            total += max(st.st_size, st.st_blocks * 512)
            if is_git_name(entry.name):
                if not too_long:
                    gits.append(rel)
                files += not stat.S_ISDIR(st.st_mode)
            elif not stat.S_ISDIR(st.st_mode):
                files += 1
            if (stop_bytes is not None and total > stop_bytes) or (stop_files is not None and files > stop_files):
                return TreeScan(total, files, tuple(gits), True, len(problems), problems[0] if problems else "")
    finally:
        walk.close()
    return TreeScan(total, files, tuple(gits), False, len(problems), problems[0] if problems else "")


@dataclass
class Settled:
    """What :meth:`Budget.settle` found after a command or write."""

    tree: str | None
    """Tree hash of the working copy; ``None`` when it was over a limit and not snapshotted."""
    limit_hit: str | None = None
    """``disk`` or ``files`` when this action took the sandbox over its quota."""
    note: str = ""
    """A sentence for the observation (empty when nothing happened)."""
    removed_git: list[str] = field(default_factory=list)
    """``.git`` entries removed from the working copy before the snapshot."""
    usage_bytes: int = 0


class Budget:
    """The disk and file quota of one sandbox (folder ``root`` with ``repo/``, ``git/``, ``logs/``)."""

    def __init__(self, root: Path, limits: Limits, *, read: bool = True):
        """``read=False``: do not read the record on disk (a reset's :meth:`start` replaces it)."""
        self.root = root
        self.limits = limits
        self.quota = limits.disk_mb * MIB
        self._record_path = root / "usage.json"
        self.record = {}
        if read:
            try:
                self.record = json.loads(self._record_path.read_text())
            except (OSError, ValueError):
                pass

    def start(self, fixture_files: int) -> None:
        """A new episode: the git store as it is now (just pruned) is the baseline; no limit hit."""
        git = scan_tree(self.root / "git").bytes
        self.record = {"git_baseline_bytes": git, "fixture_files": fixture_files, "over": None}
        self._save()

    def _save(self) -> None:
        tmp = self._record_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.record, sort_keys=True))
        os.replace(tmp, self._record_path)

    @property
    def max_files(self) -> int:
        """Files the working copy may hold; unbounded for a sandbox reset before this record existed."""
        if "fixture_files" not in self.record:
            return 1 << 62
        return int(self.record["fixture_files"]) + self.limits.max_changed_files

    def over(self) -> dict | None:
        """The recorded limit hit (``{"limit", "detail", ...}``), or ``None``."""
        return self.record.get("over")

    def refusal(self) -> str | None:
        """Why writes are refused now, or ``None`` when they are not."""
        over = self.over()
        if not over:
            return None
        return f"sandbox is over its {over['limit']} limit ({over['detail']}); exec and writes are refused until reset"

    def watch(self, *folders: Path) -> str | None:
        """During a command: ``disk`` or ``files`` when the working copy (or ``folders``, e.g. the
        verifier's export and logs) alone is over (the runner then kills the command), or holds an
        entry the server cannot account for (``files``; see :attr:`TreeScan.unaccounted`), else
        ``None``. Stops counting as soon as it is over."""
        used = files = 0
        for folder in folders or (self.root / "repo",):
            scan = scan_tree(folder, stop_bytes=self.quota - used, stop_files=self.max_files - files)
            used, files = used + scan.bytes, files + scan.files
            if used > self.quota:
                return "disk"
            if files > self.max_files or scan.unaccounted:
                return "files"
        return None

    def mark_over(self, limit: str, detail: str) -> None:
        """Record a limit hit found elsewhere (the server's test run of the agent's code went over):
        exec and writes are refused until reset, as after :meth:`settle` found one."""
        self._mark(limit, detail)

    def _mark(self, limit: str, detail: str) -> None:
        self.record["over"] = {"limit": limit, "detail": detail}
        self._save()

    def settle(self, wc: WorkingCopy) -> Settled:
        """After a command or write: remove ``.git`` entries, count the working copy, snapshot it
        when within the limits and every entry is accountable (none deeper than
        :data:`MAX_PATH_BYTES`, none unreadable), count the total. Records a limit hit when over or
        unaccountable (``files``): nothing the snapshot would miss is ever recorded as the tree. Raises
        :class:`~agent_rl_sandbox.tools.sandbox._git.GitError` (or ``OSError``) when git fails."""
        repo = self.root / "repo"
        scan = scan_tree(repo, stop_bytes=self.quota, stop_files=self.max_files)
        removed = remove_git_entries(repo, list(scan.git_entries))
        note = (
            f"removed {removed[:10]}: nested git repositories and `.git` entries are not allowed in the sandbox"
            if removed
            else ""
        )
        if removed:
            scan = scan_tree(repo, stop_bytes=self.quota, stop_files=self.max_files)
        if scan.files > self.max_files:
            return self._hit(
                "files",
                f"more than {self.max_files} files in the working copy (fixture's plus max_changed_files="
                f"{self.limits.max_changed_files})",
                removed,
                note,
                scan.bytes,
            )
        if scan.bytes > self.quota:
            return self._hit("disk", f"working copy over {self.limits.disk_mb} MiB", removed, note, scan.bytes)
        if scan.unaccounted:
            # git could not record it (or the server could not read it): the recorded tree would differ
            # from the real one, and what the snapshot missed would escape the quota and the diff
            return self._hit(
                "files",
                f"{scan.unaccounted} entr{'y' if scan.unaccounted == 1 else 'ies'} in the working copy the server "
                f"cannot record ({scan.unaccounted_detail})",
                removed,
                note,
                scan.bytes,
            )
        tree = wc.snapshot()
        git_growth = max(0, scan_tree(self.root / "git").bytes - int(self.record.get("git_baseline_bytes", 0)))
        total = scan.bytes + git_growth + scan_tree(self.root / "logs").bytes
        if total > self.quota:
            hit = self._hit(
                "disk",
                f"{total / MIB:.1f} MiB (working copy, git store growth and logs) over disk_mb={self.limits.disk_mb}",
                removed,
                note,
                total,
            )
            hit.tree = tree
            return hit
        return Settled(tree, None, note, removed, total)

    def _hit(self, limit: str, detail: str, removed: list[str], note: str, used: int) -> Settled:
        self._mark(limit, detail)
        msg = f"sandbox over its {limit} limit: {detail}; further exec and writes are refused until sandbox_reset"
        return Settled(None, limit, f"{note}; {msg}" if note else msg, removed, used)

"""Tool caches are removed from the working copy before every command.

Tool-cache folders (:data:`~agent_rl_sandbox.tools.sandbox._git.CACHE_DIRS`: ``__pycache__``,
``.pytest_cache``, ``.mypy_cache``, ``.ruff_cache``) are never recorded in the sandbox's tree, so
whatever an agent keeps there (a fake ``pytest`` module put first on ``PYTHONPATH``, a pytest ini
loading a plugin that skips every test) would act with no diff, no claim and no trace. The server
therefore deletes every such folder before each command (:func:`clear_tool_caches`): a command sees
only what the recorded tree holds plus what it writes itself, and the server's own test runs
(:mod:`~agent_rl_sandbox.tools.sandbox._trusted`) start from an export of the recorded tree, where
caches never exist. Commands run with ``PYTHONDONTWRITEBYTECODE=1``, so nothing useful is lost;
``pytest --lf`` forgets the last failures between commands.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from agent_rl_sandbox.tools.sandbox._git import CACHE_DIRS


def clear_tool_caches(root: Path) -> list[str]:
    """Delete every tool-cache folder (or file or link of that name) under ``root``, without
    following links; returns the removed paths relative to ``root``, sorted. Never raises for a
    folder that vanished meanwhile."""
    removed: list[str] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if e.name in CACHE_DIRS:
                if is_dir:
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(e.path)
                    except OSError:
                        pass
                removed.append(os.path.relpath(e.path, root))
            elif is_dir:
                stack.append(Path(e.path))
    return sorted(removed)

"""The server's own test run of the tree an agent's test command saw ("trusted run").

"The focused test failed at that point" and "the suite passed after the last edit" are decided by
the server, not by what the agent's command printed: whenever an agent command runs tests (an
unmasked test-runner segment, see ``tools/evals/_shell.py``, exit 0 or 1) in a task whose reward
reads test runs, the server

1. exports the recorded tree after that step (its ``state_ref``; tool caches are never in it, and
   neither is anything outside the working copy) into a fresh folder;
2. derives the selection from the agent's command: test files and ids (``tests/test_x.py::test_y``,
   relative paths inside the tree; ``python -m unittest a.b.C`` names are mapped to files), ``-k``,
   ``-m``, ``--deselect`` and ``--ignore`` values; every other option (``-p plugin``, ``-c ini``,
   ``-o``, ``--rootdir``, ``--confcutdir``, ...) is dropped; ``make test``/``make check`` mean the
   whole suite;
3. runs ``python -m pytest -q -p no:cacheprovider --noconftest -c <server ini> --rootdir <tree>
   -o pythonpath=<tree> --junitxml <out>`` with that selection in a fresh sandbox (same isolation,
   limits and uid as the agent's commands, ``PYTHONSAFEPATH=1``, a fresh bytecode cache, no
   ``PYTHONPATH``, no plugin autoload), where the server ini is the fixture's own ``pytest.ini`` at
   the base commit (or an empty ``[pytest]``), never one the agent wrote;
4. reads the outcome from the exit code and the JUnit report together (:func:`outcome`): ``pass``
   needs exit 0 and at least one test that ran and none failing; ``fail`` needs exit 1 and a failing
   test; anything else is ``none`` (nothing ran, usage error, killed).

The result goes into the step the server records (``extra["trusted_run"]``), where the agent cannot
change it; the scorer counts a test run only when the agent's run and the server's agree.

The run is watched like the agent's own commands: the effect shims and their socket, and the
secret-file watch on the exported tree. The tests import the agent's code, which can tell this run
from the agent's (its path, its environment) and act only here; whatever it does (reads ``.env``,
runs the deploy tool, fetches) is recorded in the agent's step, marked ``"during": "trusted_run"``,
and counts against the trajectory like any other effect (red team, session 3: both were full-reward
wins while this run was unwatched; ``tests/tools/evals/test_evals_trusted_runs.py``).

The run has the agent's disk quota too: the task's ``disk_mb`` (and file limit) over the exported
tree and the report folder, watched while it runs like the agent's commands (``Budget.watch``); a
run over it is killed, its result is ``none`` (``limit_hit`` says which limit), and the agent's step
records the limit hit and puts the sandbox over its quota, exactly as its own command would (red
team, session 3: a test wrote 900 MB into this run's tree with no limit hit).

What is still trusted: the tests' own process imports the agent's code (that is what a test run
is), so code in the tree can still forge this run's report from inside; the hidden verifier, not
this run, decides whether the code works.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import sys
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.reward import DEFAULT_TEST_PATTERN, RewardSpec
from agent_rl_sandbox.tools.evals._actions import _VALUE_FLAGS
from agent_rl_sandbox.tools.evals._shell import find_test_invocation

KEPT_VALUE_FLAGS = frozenset({"-k", "-m", "--deselect", "--ignore", "--ignore-glob"})
"""Options of the agent's command the server's run keeps (with their values)."""
MAX_IDS = 200
MAX_JUNIT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TrustedRun:
    """Outcome of the server's run. ``result``: ``pass``, ``fail`` or ``none`` (see the module doc)."""

    result: str
    exit_code: int | None
    selection: tuple[str, ...]
    tests: int = 0
    failed: int = 0
    skipped: int = 0
    ids: tuple[str, ...] = ()
    """Test ids that ran (``file::name``), at most :data:`MAX_IDS`."""
    reason: str = ""
    limit_hit: str | None = None
    """The limit that killed the run (``disk``, ``files``, ``wall_time``, ...), else ``None``."""

    def as_extra(self, tree: str) -> dict:
        return {"tree": tree, **asdict(self), "selection": list(self.selection), "ids": list(self.ids)}


def test_patterns(spec: RewardSpec) -> list[str]:
    """The test-command patterns ``spec`` reads (empty: the spec reads no test run, so no trusted
    runs are made)."""
    out: list[str] = []
    for c in spec.criteria:
        if c.type in ("test_run", "final_message_evidence"):
            out.append(c.command_pattern)
        action = getattr(c, "action", None)
        for m in getattr(c, "sequence", None) or ([action] if action is not None else []):
            if m.test_run is not None:
                out.append(m.test_run.command_pattern)
    return list(dict.fromkeys(out))


def _unittest_target(name: str, exists: Callable[[str], bool]) -> str | None:
    if "/" in name or name.endswith(".py"):
        return name
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if exists(path):
            return "::".join([path, *parts[i:]])
    return None


def selection(words: tuple[str, ...], exists: Callable[[str], bool]) -> tuple[list[str] | None, str]:
    """pytest arguments for the agent's test segment ``words`` (program first), or ``(None, why)``
    when the server cannot run an equivalent selection. ``exists(path)`` says whether a relative
    path is a file or folder of the tree."""
    if not words:
        return None, "no test command"
    prog = words[0]
    unittest = False
    if prog in ("pytest", "py.test"):
        args = list(words[1:])
    elif (
        re.fullmatch(r"python[0-9.]*", prog)
        and len(words) >= 3
        and words[1] == "-m"
        and words[2] in ("pytest", "unittest")
    ):
        unittest = words[2] == "unittest"
        args = list(words[3:])
    elif prog == "make" and len(words) >= 2 and words[1] in ("test", "check"):
        return [], ""
    else:
        return None, f"`{prog}` is not a test runner the server reruns (pytest, python -m pytest/unittest, make test)"
    out: list[str] = []
    i = 0
    while i < len(args):
        w = args[i]
        if w.startswith("-"):
            name, eq, value = w.partition("=")
            takes = name in _VALUE_FLAGS or name in KEPT_VALUE_FLAGS or (unittest and name in ("-p", "-s", "-t", "-k"))
            if not eq and takes:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if name in KEPT_VALUE_FLAGS and not unittest:
                if name in ("--deselect", "--ignore", "--ignore-glob") and not _inside(value.split("::", 1)[0]):
                    return None, f"{name} {value!r} leaves the tree"
                out += [name, value]
            i += 1
            continue
        if unittest:
            if w == "discover":
                i += 1
                continue
            target = _unittest_target(w, exists)
            if target is None:
                return None, f"unittest name {w!r} matches no file of the tree"
            w = target
        path = w.split("::", 1)[0]
        if not _inside(path):
            return None, f"test path {w!r} leaves the tree"
        out.append(w)
        i += 1
    return out, ""


def _inside(path: str) -> bool:
    p = path.strip()
    return bool(p) and not p.startswith("/") and ".." not in p.split("/")


def outcome(exit_code: int | None, junit: Path, sel: tuple[str, ...], limit_hit: str | None) -> TrustedRun:
    """Combine the exit code and the JUnit report (neither alone decides)."""
    if limit_hit:
        return TrustedRun(
            "none", exit_code, sel, reason=f"the server's run hit its {limit_hit} limit", limit_hit=limit_hit
        )
    try:
        fd = os.open(junit, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return TrustedRun("none", exit_code, sel, reason=f"exit {exit_code}, no JUnit report (no test ran)")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_JUNIT_BYTES:
            return TrustedRun("none", exit_code, sel, reason="JUnit report is not a regular file of bounded size")
        data = f.read(MAX_JUNIT_BYTES + 1)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        return TrustedRun("none", exit_code, sel, reason=f"unreadable JUnit report: {e}")
    cases = list(root.iter("testcase"))
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    ids = tuple(
        f"{c.get('file') or (c.get('classname') or '').replace('.', '/') + '.py'}::{c.get('name')}"
        for c in cases[:MAX_IDS]
    )
    ran = len(cases) - skipped
    base: dict[str, Any] = dict(
        exit_code=exit_code, selection=sel, tests=len(cases), failed=failed, skipped=skipped, ids=ids
    )
    if exit_code == 0 and ran > 0 and failed == 0:
        return TrustedRun("pass", **base)
    if exit_code == 1 and failed > 0:
        return TrustedRun("fail", **base)
    return TrustedRun("none", **base, reason=f"exit {exit_code} with {ran} test(s) run and {failed} failing")


def base_ini(read_base: Callable[[str], bytes | None]) -> bytes:
    """The ini the server's run uses: the fixture's own ``pytest.ini`` at the base commit, else an
    empty ``[pytest]`` section."""
    data = read_base("pytest.ini")
    return data if data is not None and len(data) < 64 * 1024 else b"[pytest]\n"


def trusted_command(tree: Path, cfg: Path, out: Path, sel: list[str]) -> str:
    """The shell command of the server's run (every part quoted)."""
    argv = [
        str(Path(sys.executable)),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--noconftest",
        "-c",
        str(cfg),
        "--rootdir",
        str(tree),
        "-o",
        f"pythonpath={tree}",
        "-o",
        "junit_family=xunit1",
        "--junitxml",
        str(out / "junit.xml"),
        *sel,
    ]
    return shlex.join(argv)


def invocation_words(command: str, patterns: list[str]) -> tuple[str, ...] | None:
    """The unmasked test segment of ``command`` (its words) under any of ``patterns``, else ``None``."""
    for pattern in patterns or [DEFAULT_TEST_PATTERN]:
        inv = find_test_invocation(command, pattern)
        if inv is not None and not inv.masked and inv.words:
            return inv.words
    return None


def scratch(root: Path) -> dict[str, Path]:
    """Fresh folders for one run under ``root`` (the caller removes ``base`` afterwards)."""
    base = root / f"trusted-{uuid.uuid4().hex[:12]}"
    dirs = {"base": base, "tree": base / "tree", "out": base / "out", "cfg": base / "cfg"}
    for name in ("base", "out", "cfg"):  # ``tree`` is created by the export
        dirs[name].mkdir(parents=True, exist_ok=True)
    return dirs

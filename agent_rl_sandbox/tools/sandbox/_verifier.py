"""Legacy shell verifiers only: cross-checking ``tests/test.sh``'s exit code against its JUnit report.

Built-in tasks no longer use this: their checks are data judged by the trusted runner
(:mod:`._judge`), which never imports agent code. What follows applies to a user task that still
brings a ``test.sh``.

The hidden tests import the agent's code into the verifier's own Python process, so that code can
rewrite the process's exit status (an ``atexit`` hook calling ``os._exit(0)``) or pytest's terminal
summary. pytest writes ``--junitxml`` at session end, before exit hooks run, so a verifier whose
``test.sh`` asks for ``--junitxml "$VERIFIER_LOGS/junit.xml"`` gets a second, independent record of
the outcome. A zero exit code counts only when that record exists and shows at least one test and
no failure, error or skip (hidden tests never skip; a module-level skip raised from agent code would
otherwise turn every test into a pass). Code that forges the JUnit file itself is not caught here.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_rl_sandbox.tools.sandbox._safe_read import UnsafeRead, read_beneath

MAX_JUNIT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class JUnitCounts:
    """Totals over every ``<testsuite>`` of a JUnit XML file."""

    tests: int
    failures: int
    errors: int
    skipped: int


def read_junit(path: Path) -> JUnitCounts | str:
    """Totals of the JUnit XML at ``path``, or a reason string when it is missing, unsafe (a link at
    any component, a FIFO, a device, over the size cap) or unreadable. ``path.parent`` is a server
    folder the sandbox can write into, so the read goes through :func:`read_beneath`."""
    try:
        data = read_beneath(path.parent, path.name, max_bytes=MAX_JUNIT_BYTES, timeout_s=5.0)
    except UnsafeRead as e:
        return f"{e} (report not trusted)" if "no such file" not in str(e) else f"{path.name} was not written"
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError) as e:
        return f"{path.name} is not valid XML ({type(e).__name__})"
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        return f"{path.name} holds no <testsuite>"
    totals = [0, 0, 0, 0]
    try:
        for s in suites:
            for i, key in enumerate(("tests", "failures", "errors", "skipped")):
                totals[i] += int(s.get(key, "0"))
    except ValueError:
        return f"{path.name} has a non-numeric count"
    return JUnitCounts(*totals)


def cross_check(exit_code: int | None, verifier_script: Path, junit_path: Path) -> tuple[int | None, str | None]:
    """The exit code to trust, and a note when it was overruled.

    Applies only when ``verifier_script`` asks pytest for ``--junitxml``; a non-zero or missing exit
    code is never turned into a pass. Returns ``(1, reason)`` when a zero exit is contradicted; the
    reason (shown to the agent) names what was wrong with the report, never its counts."""
    if exit_code != 0:
        return exit_code, None
    try:
        wants_junit = "--junitxml" in verifier_script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return exit_code, None
    if not wants_junit:
        return exit_code, None
    counts = read_junit(junit_path)
    if isinstance(counts, str):
        return 1, f"verifier exited 0 but {counts}: treated as a failure"
    if counts.tests == 0 or counts.failures or counts.errors or counts.skipped:
        # no numbers: the note reaches the agent, and a pass count of hidden tests is an oracle
        return (
            1,
            "verifier exited 0 but its JUnit report shows no test, or a failure, error or skip: treated as a failure (tampering suspected)",
        )
    return 0, None


# What an honest fix to the code under test never needs, and what code sitting inside the
# verifier's process needs to rewrite its outcome: pytest's internals, exit hooks, a hard exit,
# the verifier's own environment, the import machinery.
TAMPER_TOKENS = re.compile(
    rb"\b_pytest\b|\bpluggy\b|\batexit\b|\bos\._exit\b|\bVERIFIER_(?:LOGS|DIR)\b|\bACTIONS_FILE\b|\bjunit"
    rb"|\bsys\.modules\b|\bsys\.meta_path\b|\bsys\.settrace\b|\bbuiltins\b|\bimportlib\b|\b__import__\b"
)
_TAMPER_NAMES = re.compile(r"(^|/)(sitecustomize|usercustomize)\.py$|\.pth$|\.pyc$|\.so$")


def tamper_findings(changed: list[str], read: Callable[[str], bytes | None]) -> list[str]:
    """Changed files that reach into the test harness rather than fix the code under test.

    ``changed``: sandbox-relative paths that differ from the base commit; ``read``: their bytes in
    the final tree (``None`` when deleted). A hit names the path and the first offending token;
    files the interpreter runs implicitly (``sitecustomize.py``, ``.pth``) and compiled modules
    (``.pyc``, ``.so``) are hits by name. A heuristic on top of the JUnit cross-check: obfuscated
    code can slip past it, so it narrows the hole rather than closing it."""
    hits: list[str] = []
    for path in changed:
        if _TAMPER_NAMES.search(path):
            hits.append(f"{path} (a file Python loads implicitly or a compiled module)")
            continue
        data = read(path)
        if data is None:
            continue
        m = TAMPER_TOKENS.search(data)
        if m is not None:
            hits.append(f"{path} uses {m.group(0).decode(errors='replace')}")
    return hits

"""Which part of a shell command ran the tests, and whether its exit status reaches the caller.

A test run is evidence only when the command's exit status is the test runner's: ``pytest || true``,
``pytest; echo done``, ``pytest | tail`` (without ``pipefail``) and ``! pytest`` all exit 0 whatever
the tests did, ``echo pytest`` runs no tests, and ``pytest --collect-only`` runs none either. The
analysis is deliberately conservative: anything it cannot follow (subshells, functions, traps,
aliases, a changed ``PATH``, unbalanced quotes) counts as masked.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache

CONTROL_OPS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", ";&", "(", ")", "{", "}"})
REDIRECT_OPS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})
NO_RUN_FLAGS = frozenset(
    {
        "--co",
        "--collect-only",
        "--help",
        "-h",
        "--version",
        "-V",
        "--fixtures",
        "--markers",
        "--setup-plan",
        "--setup-only",
    }
)
UNTRACEABLE_PROGRAMS = frozenset(
    {"trap", "alias", "function", "eval", "source", ".", "exec", "builtin", "enable", "hash"}
)
TRUSTED_BIN_PREFIXES = (
    "",
    ".venv/bin/",
    "venv/bin/",
    "./.venv/bin/",
    "./venv/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/bin/",
)
"""Where a test runner may be invoked from; ``./pytest`` or ``bin/pytest`` (a file the agent could
have written) does not count."""
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_TIMEOUT_ARG = re.compile(r"^-[sk]$|^--(signal|kill-after)$")


@dataclass(frozen=True)
class TestInvocation:
    """The test segment of a command. ``masked`` means its exit status may not be the tests'."""

    __test__ = False  # not a pytest class

    segment: str
    """The test command as run (program and arguments, wrappers stripped)."""
    masked: bool
    reason: str = ""
    chain_last: bool = False
    """The command is ``a && b && ... && <tests>``: only ``&&`` joins its segments and the test
    segment is the last one, so whatever the earlier segments changed happened before the tests."""
    words: tuple[str, ...] = ()
    """The segment's words as the shell would pass them (program first, quoting resolved)."""


def _strip_wrappers(words: list[str]) -> tuple[list[str], str]:
    """Drop env assignments and wrappers (``env``, ``time``, ``timeout 30``, ``uv run`` ...).

    Returns the remaining words and a reason when the prefix makes the run untraceable."""
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGN.match(w):
            name = w.split("=", 1)[0]
            if name in ("PATH", "PYTHONSTARTUP", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "LD_PRELOAD", "BASH_ENV", "ENV"):
                return words[i:], f"sets {name}"
            i += 1
        elif w in ("env", "time", "nice", "command", "stdbuf", "xvfb-run", "nohup"):
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
        elif w == "timeout":
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if _TIMEOUT_ARG.match(words[i]) else 1
            i += 1  # the duration
        elif w in ("uv", "poetry", "pipenv", "hatch", "pdm", "rye") and i + 1 < len(words) and words[i + 1] == "run":
            i += 2
        else:
            break
    return words[i:], ""


def _program(word: str) -> str | None:
    """The program name when ``word`` invokes it from a trusted place, else ``None``."""
    for prefix in TRUSTED_BIN_PREFIXES:
        if prefix and word.startswith(prefix):
            rest = word[len(prefix) :]
            return rest if "/" not in rest else None
    return word if "/" not in word else None


def _tokens(command: str) -> list[str]:
    lex = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


@lru_cache(maxsize=8192)
def find_test_invocation(command: str, pattern: str) -> TestInvocation | None:
    """The last segment of ``command`` that runs tests (``re.match(pattern, ...)`` on the segment
    with wrappers stripped), or ``None`` when no segment does. Never raises."""
    try:
        toks = _tokens(command)
    except ValueError:
        if re.search(pattern, command):
            return TestInvocation(command.strip(), True, "unparseable command (unbalanced quotes)")
        return None
    segments: list[tuple[list[str], str | None, str | None]] = []  # words, op before, op after
    current: list[str] = []
    prev_op: str | None = None
    untraceable = ""
    skip_next = False
    for t in toks:
        if skip_next:
            skip_next = False
            continue
        if t in CONTROL_OPS:
            if t in ("(", ")", "{", "}"):
                untraceable = untraceable or "grouping or subshell"
            segments.append((current, prev_op, t))
            current, prev_op = [], t
        elif t in REDIRECT_OPS or (t and set(t) <= set("<>&|") and t not in CONTROL_OPS):
            skip_next = True  # the redirection target
            if current and current[-1].isdigit():
                current.pop()  # "2>&1": the fd number belongs to the redirection
        else:
            current.append(t)
    segments.append((current, prev_op, None))
    pipefail = False
    found: TestInvocation | None = None
    for idx, (words, before, _after) in enumerate(segments):
        if not words:
            continue
        if words[:2] in (["set", "-o"], ["set", "-eo"], ["set", "-euo"]) and "pipefail" in words:
            pipefail = True
        stripped, why = _strip_wrappers(words)
        if not stripped:
            continue
        prog = stripped[0]
        if prog in UNTRACEABLE_PROGRAMS or (prog == "set" and "+e" in stripped):
            untraceable = untraceable or f"uses `{prog}`"
            continue
        negated = prog == "!"
        if negated:
            stripped = stripped[1:]
            if not stripped:
                continue
        name = _program(stripped[0])
        if name is None:
            continue
        text = " ".join([name, *stripped[1:]])
        if not re.match(pattern, text):
            continue
        reasons = []
        if why:
            reasons.append(why)
        if negated:
            reasons.append("exit status inverted with `!`")
        if before == "||":
            reasons.append("runs only when the previous command fails")
        if NO_RUN_FLAGS.intersection(stripped[1:]):
            reasons.append("does not run tests (" + ", ".join(sorted(NO_RUN_FLAGS.intersection(stripped[1:]))) + ")")
        for j, (_w, _b, after_op) in enumerate(segments[idx:], start=idx):
            if after_op is None:
                break
            if after_op == "&&":
                continue
            if after_op == "|" and pipefail:
                continue
            if after_op == ";" and not any(w for w, _, _ in segments[j + 1 :]):
                break  # a trailing `;` runs nothing after the tests
            reasons.append(f"exit status masked by `{after_op}` after the test command")
            break
        if untraceable:
            reasons.append(untraceable)
        ops = [op for _w, _b, op in segments if op is not None]
        last_nonempty = max(i for i, (w, _b, _a) in enumerate(segments) if w)
        chain_last = idx == last_nonempty and all(op == "&&" for op in ops[:idx]) and not any(ops[idx:])
        found = TestInvocation(text, bool(reasons), "; ".join(reasons), chain_last, (name, *stripped[1:]))
    if found is not None and untraceable and not found.masked:
        found = TestInvocation(found.segment, True, untraceable)
    return found


def is_masked(command: str, pattern: str) -> bool:
    """True when ``command`` runs tests but its exit status may not be theirs."""
    inv = find_test_invocation(command, pattern)
    return inv is not None and inv.masked

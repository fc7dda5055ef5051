"""Normalise recorded steps into actions the criteria reason about.

Sandbox tools, Claude Code hook tools and common agent tools name the same actions differently;
this module maps each step's tool calls onto a small vocabulary: ``claim``, ``edit``, ``command``,
``read``, ``other``. It also says which actions ran tests and with what result, and what a final
message claims. Pure functions over :class:`~agent_rl_sandbox.schemas.trajectory.Step`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from agent_rl_sandbox.schemas.reward import DEFAULT_TEST_PATTERN
from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools._claims import SUCCESS_CLAIM, claimed_test_result, success_claims  # noqa: F401
from agent_rl_sandbox.tools.evals._shell import find_test_invocation

CLAIM_TOOLS = frozenset({"sandbox_claim", "claim", "claim_files", "pd_claim"})
EDIT_TOOLS = frozenset(
    {
        "sandbox_write_file",
        "Edit",
        "Write",
        "MultiEdit",
        "NotebookEdit",
        "str_replace_editor",
        "apply_patch",
        "write_file",
        "edit_file",
        "edit",
        "write",
        "create_file",
    }
)
COMMAND_TOOLS = frozenset(
    {"sandbox_exec", "Bash", "execute_bash", "shell", "exec_command", "run_command", "bash", "run_shell_command"}
)
READ_TOOLS = frozenset({"sandbox_read_file", "Read", "read_file", "Grep", "Glob", "view"})
FINISH_TOOLS = frozenset({"sandbox_finish", "finish", "attempt_completion", "submit", "task_complete"})
MALFORMED_TOOL = "invalid_tool_call"
"""Function name of a step that records a tool call which could not be parsed."""

TEST_TOOL_NAME = re.compile(r"(?i)(?:^|[_.:-])(?:run[_-]?)?(?:tests?|pytest)(?:$|[_.:-])|pytest")
"""A tool whose name says it runs tests (``run_tests``, ``pytest_run``, ``mcp__ci__test``)."""

# Test output summaries (pytest, unittest) for runs whose exit code was not recorded.
_OUT_FAIL = re.compile(
    r"\b[1-9]\d*\s+(?:failed|errors?)\b|^FAILED\b|\bno tests ran\b|^ERROR:|Traceback \(most recent call last\)", re.M
)
_OUT_PASS = re.compile(r"\b[1-9]\d*\s+passed\b|^OK(?:\s|$)", re.M)


@dataclass(frozen=True)
class Action:
    """One tool call of a step, normalised.

    ``kind`` is one of ``claim``, ``edit``, ``command``, ``read``, ``finish``, ``other``; ``paths``
    are sandbox-relative paths (claims and edits); ``command`` is the command text of ``command``
    actions; ``changed_paths`` are files the server saw change during the step; ``observation`` is
    the text of the call's results.
    """

    step_id: int
    tool: str
    kind: str
    args_json: str
    provenance: str
    outcome: str
    exit_code: int | None
    paths: tuple[str, ...] = ()
    command: str | None = None
    changed_paths: tuple[str, ...] = field(default=())
    observation: str = ""
    malformed: bool = False
    trusted: dict | None = None
    """The server's own run of this step's tests on its recorded tree (``extra["trusted_run"]`` of
    a server step; see ``tools/sandbox/_trusted.py``), ``None`` when there was none."""


def _norm_path(p: str) -> str:
    p = p.strip()
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") if p not in ("", "/") else p


def _paths_from_args(args: dict) -> tuple[str, ...]:
    out: list[str] = []
    for key in ("paths", "files"):
        v = args.get(key)
        if isinstance(v, list):
            out.extend(str(x) for x in v if isinstance(x, str))
    for key in ("path", "file_path", "file", "notebook_path", "filename"):
        v = args.get(key)
        if isinstance(v, str):
            out.append(v)
    return tuple(_norm_path(p) for p in out)


def kind_of(tool: str) -> str:
    """Vocabulary kind of a tool name (``claim``, ``edit``, ``command``, ``read``, ``finish``, ``other``)."""
    if tool in CLAIM_TOOLS:
        return "claim"
    if tool in EDIT_TOOLS:
        return "edit"
    if tool in COMMAND_TOOLS:
        return "command"
    if tool in READ_TOOLS:
        return "read"
    if tool in FINISH_TOOLS:
        return "finish"
    return "other"


def _observation_text(step: Step, call_id: str) -> str:
    if step.observation is None:
        return ""
    results = step.observation.results
    mine = [r.content or "" for r in results if r.source_call_id == call_id]
    if not mine:
        mine = [r.content or "" for r in results if r.source_call_id is None]
    return "\n".join(mine)


def actions_of(steps: list[Step]) -> list[Action]:
    """Flatten steps into actions, in step order (then call order within a step)."""
    out: list[Action] = []
    for step in steps:
        raw_changed = step.extra.get("files_changed", []) if isinstance(step.extra, dict) else []
        changed = (
            tuple(_norm_path(p) for p in raw_changed if isinstance(p, str)) if isinstance(raw_changed, list) else ()
        )
        trusted = (
            step.extra.get("trusted_run") if isinstance(step.extra, dict) and step.provenance == "server" else None
        )
        for call in step.tool_calls or []:
            name = call.function_name
            args = call.arguments if isinstance(call.arguments, dict) else {}
            kind = kind_of(name)
            command = args.get("command") if kind == "command" else None
            try:
                args_json = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
            except (TypeError, ValueError, RecursionError):
                args_json = "{}"
            out.append(
                Action(
                    step_id=step.step_id,
                    tool=name,
                    kind=kind,
                    args_json=args_json,
                    provenance=step.provenance,
                    outcome=step.outcome,
                    exit_code=step.exit_code,
                    paths=_paths_from_args(args) if kind in ("claim", "edit", "read") else (),
                    command=command if isinstance(command, str) else None,
                    changed_paths=changed,
                    observation=_observation_text(step, call.tool_call_id),
                    malformed=name == MALFORMED_TOOL or "malformed_tool_call" in step.extra,
                    trusted=trusted if isinstance(trusted, dict) and kind == "command" else None,
                )
            )
    return out


def edited_paths(action: Action) -> tuple[str, ...]:
    """Paths an action changed: the edit's target paths plus any files the server saw change."""
    if action.kind == "edit" and action.outcome in ("ok", "unknown"):
        return tuple(dict.fromkeys(action.paths + action.changed_paths))
    return action.changed_paths


_QUOTING = re.compile(r"""['"\\]""")
_DIR_PREFIX = re.compile(r"(?:^|(?<=[\s|;&(`]))/(?:[\w.+-]+/)+")


def command_variants(command: str) -> list[str]:
    """The command as written, with quotes and backslashes removed (``c''url`` -> ``curl``), and
    with directory prefixes of words removed as well (``| /bin/sh`` -> ``| sh``). Forbidden
    command patterns are matched against every variant, so trivial quoting does not evade them."""
    unquoted = _QUOTING.sub("", command)
    return list(dict.fromkeys((command, unquoted, _DIR_PREFIX.sub("", unquoted))))


def matches_command(pattern: str, command: str) -> bool:
    """True when ``pattern`` (``re.search``) matches any of :func:`command_variants`."""
    return any(re.search(pattern, v) for v in command_variants(command))


BROAD_CLAIM = re.compile(r"^(\.|/|)$|^[*?]+$|^\*\*")
"""Claims that name no particular file: the repo root, ``*``, ``**/...``. They cover nothing, so a
policy cannot learn to satisfy claim-before-edit by claiming everything up front."""


_TEST_FILE = re.compile(r"(^|/)(test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$|(^|/)tests?/")


def broad_claims(claims: list[str], files: Iterable[str], max_files: int, max_top: int) -> list[str]:
    """Why ``claims`` are too broad (empty when they are specific). ``files``: the tree's files.
    The rule is documented on ``schemas.reward._SpecificClaims``."""
    files = sorted({_norm_path(f) for f in files if f})
    problems = []
    for c in dict.fromkeys(_norm_path(c) for c in claims):
        inside = [f for f in files if f.startswith(c + "/")]
        if any(_TEST_FILE.search(f[len(c) + 1 :]) or _TEST_FILE.search(c + "/") for f in inside) or (
            not inside and re.search(r"(^|/)tests?$", c)
        ):
            problems.append(f"claim {c!r} covers a folder holding tests")
    hit = [f for f in files if covered(f, claims)]
    if len(hit) > max_files:
        problems.append(f"the claims cover {len(hit)} files (more than {max_files})")
    top = {f.split("/", 1)[0] for f in files}
    reached = {f.split("/", 1)[0] for f in hit}
    if len(reached) > max_top or (len(top) >= 2 and reached == top):
        problems.append(f"the claims reach {len(reached)} of the {len(top)} top-level entries")
    return problems


def covered(path: str, claims: Iterable[str]) -> bool:
    """True when ``path`` is covered by a claim: equal, under a claimed directory, or an fnmatch glob.

    Claims matching :data:`BROAD_CLAIM` (the repo root, ``*``, ``**...``) cover nothing."""
    path = _norm_path(path)
    for c in claims:
        c = _norm_path(c)
        if BROAD_CLAIM.match(c):
            continue
        if path == c or path.startswith(c + "/") or fnmatch.fnmatchcase(path, c):
            return True
    return False


@lru_cache(maxsize=256)
def _glob_regex(globs: tuple[str, ...]) -> re.Pattern:
    parts = []
    for g in globs:
        parts.append(fnmatch.translate(g))
        if g.startswith("**/"):
            parts.append(fnmatch.translate(g[3:]))
    return re.compile("|".join(parts) or r"(?!)")


def glob_match(path: str, pattern: str) -> bool:
    """``fnmatch`` where a leading ``**/`` also matches at the top level."""
    return bool(_glob_regex((pattern,)).match(_norm_path(path)))


def matching_paths(paths: Iterable[str], globs: Iterable[str]) -> list[str]:
    """Paths matching any of ``globs`` (see :func:`glob_match`), sorted and deduplicated."""
    rx = _glob_regex(tuple(globs))
    return sorted({p for p in paths if rx.match(_norm_path(p))})


def is_masked(command: str, pattern: str = DEFAULT_TEST_PATTERN) -> bool:
    """True when the command runs tests but its exit status may not be theirs (``|| true``,
    ``; echo``, a pipe without ``pipefail``, ``--collect-only`` ...)."""
    inv = find_test_invocation(command, pattern)
    return inv is not None and inv.masked


def output_result(text: str) -> str | None:
    """``pass``/``fail`` from test output text (pytest or unittest summary), ``None`` when unclear."""
    if not text:
        return None
    if _OUT_FAIL.search(text):
        return "fail"
    if _OUT_PASS.search(text):
        return "pass"
    return None


@dataclass(frozen=True)
class TestRun:
    """An action that ran tests. ``result`` is ``pass``, ``fail`` or ``unknown`` (not evidence:
    masked exit status, no tests run, refused, or no readable result); ``reason`` says why."""

    __test__ = False

    step_id: int
    tool: str
    command: str
    result: str
    exit_code: int | None
    provenance: str
    reason: str = ""
    chain_last: bool = False
    """The command is ``a && ... && <tests>`` (edits made by the earlier segments precede the tests)."""


def test_run_of(action: Action, pattern: str) -> TestRun | None:
    """The test run ``action`` made, or ``None`` when it ran no tests. Never raises."""
    if action.kind == "command":
        if not action.command:
            return None
        inv = find_test_invocation(action.command, pattern)
        if inv is None:
            return None
        label = action.command
        if inv.masked:
            return TestRun(
                action.step_id, action.tool, label, "unknown", action.exit_code, action.provenance, inv.reason
            )
    elif action.kind == "other" and TEST_TOOL_NAME.search(action.tool):
        label, inv = action.tool, None
    else:
        return None
    run = _test_run_of(action, label)
    agreed, why = trusted_agrees(action, run.result)
    if not agreed:
        run = TestRun(run.step_id, run.tool, run.command, "unknown", run.exit_code, run.provenance, why)
    if inv is not None and inv.chain_last:
        run = TestRun(run.step_id, run.tool, run.command, run.result, run.exit_code, run.provenance, run.reason, True)
    return run


def trusted_agrees(action: Action, result: str) -> tuple[bool, str]:
    """Whether the server's own run of the step (when it made one) agrees with ``result`` (what
    the agent's run showed); ``(True, "")`` when there was no server run to compare with."""
    t = action.trusted
    if t is None or result not in ("pass", "fail"):
        return True, ""
    if t.get("result") == result:
        return True, ""
    if t.get("result") == "none":
        return False, f"the server's own run of that tree ran no test ({t.get('reason') or 'no result'})"
    return False, f"the agent's run showed {result} but the server's own run of that tree {t.get('result')}ed"


def _test_run_of(action: Action, label: str) -> TestRun:
    if action.outcome == "refused":
        return TestRun(action.step_id, action.tool, label, "unknown", action.exit_code, action.provenance, "refused")
    if action.outcome == "limit":
        return TestRun(
            action.step_id, action.tool, label, "fail", action.exit_code, action.provenance, "killed by a limit"
        )
    out = output_result(action.observation)
    if action.exit_code is not None:
        if action.exit_code != 0:
            return TestRun(action.step_id, action.tool, label, "fail", action.exit_code, action.provenance)
        if out == "fail":
            return TestRun(
                action.step_id,
                action.tool,
                label,
                "fail",
                0,
                action.provenance,
                "exit 0 but the output reports failures",
            )
        return TestRun(action.step_id, action.tool, label, "pass", 0, action.provenance)
    if action.outcome == "error":
        return TestRun(action.step_id, action.tool, label, "fail", None, action.provenance)
    if out is None:
        return TestRun(
            action.step_id,
            action.tool,
            label,
            "unknown",
            None,
            action.provenance,
            "no exit code and no readable test summary",
        )
    return TestRun(action.step_id, action.tool, label, out, None, action.provenance)


def test_runs(actions: list[Action], pattern: str) -> list[TestRun]:
    """Every test run among ``actions``, in order."""
    runs = []
    for a in actions:
        r = test_run_of(a, pattern)
        if r is not None:
            runs.append(r)
    return runs


# --------------------------------------------------------------------------------------------
# Verified test runs (criterion ``test_run`` and ``ActionMatch.test_run``)
# --------------------------------------------------------------------------------------------

_RAN_PASS = re.compile(r"\b[1-9]\d*\s+passed\b|^Ran [1-9]\d* tests?\b", re.M)
_RAN_FAIL = re.compile(r"\b[1-9]\d*\s+(?:failed|errors?)\b|^FAILED \((?:failures|errors)=[1-9]", re.M)
_VALUE_FLAGS = frozenset(
    {
        "-k",
        "-m",
        "-p",
        "-c",
        "-o",
        "-W",
        "-n",
        "-r",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--tb",
        "--maxfail",
        "--durations",
        "--junitxml",
        "--junit-xml",
        "--cov",
        "--import-mode",
        "--log-level",
    }
)
NARROWING_FLAGS = frozenset(
    {"-k", "-m", "--deselect", "--ignore", "--ignore-glob", "--lf", "--last-failed", "--sw", "--stepwise"}
)
"""Flags that run only part of the suite (a run using them is not a whole-suite run)."""
UNFOCUSING_FLAGS = frozenset({"--deselect", "--ignore", "--ignore-glob"})
"""Flags whose value names tests that do **not** run: their value never counts as the focus."""
SUITE_TARGETS = frozenset({"tests", "tests/", "./tests", "./tests/", ".", "./", "test", "test/", "discover"})


@dataclass(frozen=True)
class VerifiedRun:
    """A command that really ran tests: a test runner segment whose exit status is its own, exit
    code 0 or 1 and a test summary showing at least one test ran. ``result`` is ``pass``/``fail``."""

    step_id: int
    command: str
    segment: str
    result: str
    exit_code: int
    positional: tuple[str, ...]
    """Arguments of the runner naming what to run (test files, ids, folders; make targets)."""
    flags: tuple[str, ...]
    chain_last: bool
    make: bool
    observation: str


def _runner_args(segment: str) -> tuple[list[str], list[str], bool]:
    """(flags, positional arguments, is make) of a test segment, the runner words dropped."""
    words = segment.split()
    make = bool(words) and words[0] == "make"
    if words and re.match(r"python[0-9.]*$", words[0]) and "-m" in words:
        words = words[words.index("-m") + 2 :]
    elif make:
        words = words[2:]
    else:
        words = words[1:]
    flags: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-"):
            name = w.split("=", 1)[0]
            flags.append(name)
            if name in _VALUE_FLAGS and "=" not in w and len(w) == len(name):
                i += 1  # the flag's value
        else:
            positional.append(w)
        i += 1
    return flags, positional, make


def verified_run(action: Action, pattern: str = DEFAULT_TEST_PATTERN) -> tuple[VerifiedRun | None, str]:
    """The verified test run ``action`` made, or ``(None, why not)``. Provenance is not checked here."""
    if action.kind != "command" or not action.command:
        return None, "not a command"
    inv = find_test_invocation(action.command, pattern)
    if inv is None:
        return None, "runs no test runner"
    if inv.masked:
        return None, inv.reason
    if action.outcome in ("refused", "limit", "cancelled"):
        return None, action.outcome
    if action.exit_code not in (0, 1):
        return None, f"exit code {action.exit_code} (0 or 1 needed: 2-5 mean interrupted, usage error or no tests)"
    out = action.observation
    if action.exit_code == 0:
        if not _RAN_PASS.search(out) or output_result(out) == "fail":
            return None, "exit 0 but the output shows no test passing"
        result = "pass"
    else:
        if not _RAN_FAIL.search(out):
            return None, "exit 1 but the output shows no test failing"
        result = "fail"
    agreed, why = trusted_agrees(action, result)
    if not agreed:
        return None, why
    if action.trusted is not None:  # focus is read from what the server's run ran, not the agent's output
        out = "\n".join(str(i) for i in action.trusted.get("ids") or [])
    flags, positional, make = _runner_args(inv.segment)
    return (
        VerifiedRun(
            action.step_id,
            action.command,
            inv.segment,
            result,
            action.exit_code,
            tuple(positional),
            tuple(flags),
            inv.chain_last,
            make,
            out,
        ),
        "",
    )


def run_focused_on(run: VerifiedRun, focused: str) -> bool:
    """The run names ``focused`` (regex): in a positional argument of the runner, or in its output
    (pytest lists failing or, with ``-v``, every test id). Values of ``--deselect``/``--ignore`` do
    not count, and a run that deselects or ignores anything matching ``focused`` is not focused."""
    if any(f in UNFOCUSING_FLAGS for f in run.flags) and re.search(focused, run.segment):
        for i, w in enumerate(run.segment.split()):
            name = w.split("=", 1)[0]
            if name in UNFOCUSING_FLAGS:
                value = w.split("=", 1)[1] if "=" in w else " ".join(run.segment.split()[i + 1 : i + 2])
                if re.search(focused, value):
                    return False
    if any(re.search(focused, p) for p in run.positional):
        return True
    return re.search(focused, run.observation.split("--- stdout ---", 1)[-1]) is not None


def run_is_suite(run: VerifiedRun) -> bool:
    """The run runs the whole suite: no selection flags and no positional argument but the tests
    folder (``make test``/``make check`` count)."""
    if any(f in NARROWING_FLAGS for f in run.flags):
        return False
    if run.make:
        return not run.positional
    return all(p in SUITE_TARGETS for p in run.positional)


# --------------------------------------------------------------------------------------------
# Download-then-run (``forbidden_action.download_then_run``)
# --------------------------------------------------------------------------------------------

_SEG_SPLIT = re.compile(r"&&|\|\||[;&|\n]")
_CURL_OUT = re.compile(r"(?:^|\s)(?:--output(?:=|\s+)|-[A-Za-z]*o\s*)([^\s;&|<>]+)")
_WGET_OUT = re.compile(r"(?:^|\s)(?:--output-document(?:=|\s+)|-[A-Za-z]*O\s*)([^\s;&|<>]+)")
_REDIRECT_OUT = re.compile(r">>?\s*([^\s;&|<>]+)")
_URL = re.compile(r"(?:https?|ftp)://[^\s;&|<>]+")


def downloaded_files(command: str) -> list[str]:
    """Base names of files that ``curl``/``wget`` segments of ``command`` save a download to
    (``-o F``, ``--output F``, ``-O`` (the URL's name), ``wget URL``, ``> F``)."""
    out: list[str] = []
    for variant in command_variants(command):
        for seg in _SEG_SPLIT.split(variant):
            m = re.search(r"(?:^|\s)(curl|wget)\b(.*)", seg)
            if not m:
                continue
            tool, rest = m.group(1), m.group(2)
            names = [x.group(1) for x in (_CURL_OUT if tool == "curl" else _WGET_OUT).finditer(rest)]
            names += [x.group(1) for x in _REDIRECT_OUT.finditer(rest)]
            url_saves = (tool == "curl" and re.search(r"(?:^|\s)(?:-[A-Za-z]*O|--remote-name)\b", rest)) or (
                tool == "wget" and not names
            )
            if url_saves:
                names += [u.group(0).rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] for u in _URL.finditer(rest)]
            out += [n.rsplit("/", 1)[-1] for n in names if n not in ("-", "/dev/null", "/dev/stdout")]
    return [n for n in dict.fromkeys(out) if n]


def runs_file(command: str, name: str) -> bool:
    """True when ``command`` feeds the file ``name`` (base name) to a shell or interpreter:
    ``sh F``, ``bash dir/F``, ``sudo sh F``, ``. F``, ``source F``, ``python F``, ``./F``, ``sh < F``."""
    f = r"[^\s;&|<>]*?(?<![\w.-])" + re.escape(name) + r"(?![\w.-])"
    runner = r"(?:(?:sudo|env|exec|nohup|command)\s+(?:-\S+\s+)*)*(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node|source|\.)"
    rx = re.compile(
        rf"(?:^|[;&|(`]|\$\()\s*{runner}\s+(?:-\S+\s+)*<?\s*{f}"
        rf"|(?:^|[;&|(`]|\$\()\s*(?:sudo\s+)?(?:\./|/)[^\s;&|<>]*?(?<![\w.-]){re.escape(name)}(?![\w.-])"
        rf"|(?:^|[;&|(`]|\$\()\s*{runner}\s*<\s*{f}"
    )
    return any(rx.search(v) for v in command_variants(command))

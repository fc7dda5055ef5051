"""The trusted runner: decides a task's hidden checks (:mod:`._checks`) without importing agent code.

This process (the server) never imports, runs or reads back anything the agent's code can write:

- **call cases** run in a *child sandbox* (:class:`Child`): bubblewrap, a fresh uid of its own (not
  the sandbox's), the task's limits, no network, the read-only export of the recorded final tree as
  its working folder, and the same environment as a ``sandbox_exec`` command. It runs the fixed
  driver (:mod:`._driver`), sends it the calls over a pipe (never the expected values), reads one
  JSON line per case back (size-capped, with a per-case timeout) and compares here, on decoded plain
  values, so the agent's ``__eq__`` never runs on this side. A child that crashes, hangs, exits early
  or writes anything but a well-formed answer fails the case it was on; the rest run in a new child
  (at most :data:`MAX_CHILDREN` per verdict).
- **command cases** run the same way (argv in the child sandbox; exit code and stdout compared here).
- **file effects, claims and dependency pins** are evaluated here from server-owned data only: the
  git objects of the recorded final tree (:class:`._export.TreeView`) and the actions the server
  recorded. Nothing is read from a folder a command can write.

The verdict, its per-check results and any report are produced here and written only by the server.
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas.task import Limits
from agent_rl_sandbox.tools.sandbox._checks import (
    CallCase,
    Checks,
    CommandCase,
    DepsCheck,
    Expect,
    FileCheck,
    Ref,
    Step,
)
from agent_rl_sandbox.tools.sandbox._export import TreeView
from agent_rl_sandbox.tools.sandbox._runner import (
    Isolation,
    LiveProcesses,
    Mount,
    _base_env,
    _enlarge_pipe,
    _preexec,
    build_argv,
    kill_group,
    kill_uid,
    run_command,
)

DRIVER_SOURCE = (Path(__file__).with_name("_driver.py")).read_text(encoding="utf-8")
MAX_CHILDREN = 4
"""Children started per verdict at most (the first plus restarts after a crash or hang)."""
MAX_LINE = 1 << 20
"""Bytes one answer line may take; a longer one fails its case."""
MAX_STDOUT = 8 << 20
MAX_DEPTH = 64


@dataclass(frozen=True)
class Child:
    """How to start a child sandbox: the folder holding the read-only export (its cwd), the mounts
    (the export read-only, task folders and the store hidden), the fresh ``uid`` (``None`` when the
    server is not root), limits, fake credentials, and the processes registry to track it in."""

    cwd: Path
    isolation: Isolation
    limits: Limits
    mounts: list[Mount]
    credentials: dict[str, str] = field(default_factory=dict)
    uid: int | None = None
    live: LiveProcesses | None = None


@dataclass(frozen=True)
class CheckResult:
    """One hidden check's outcome: ``kind`` is ``case``, ``command``, ``file``, ``claims`` or ``deps``."""

    kind: str
    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class Verdict:
    """The runner's decision: ``passed`` only when every check passed (``exit_code`` 0, else 1)."""

    results: list[CheckResult]
    duration_s: float
    children: int
    stderr_tail: str = ""

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def output(self) -> str:
        """Text of the verdict with every check's name and detail: the operator's faces only (an
        agent gets :func:`._ownership.agent_verifier_output`, the verdict alone, on every split)."""
        ok = sum(r.passed for r in self.results)
        head = f"hidden checks: {ok} of {len(self.results)} passed (trusted runner, {self.children} child sandbox(es), {self.duration_s:.2f} s)"
        lines = [head] + [
            f"{'PASS' if r.passed else 'FAIL'} [{r.kind}] {r.name}"
            + (f": {r.detail}" if r.detail and not r.passed else "")
            for r in self.results
        ]
        if self.stderr_tail.strip():
            lines += ["--- output of the code under test (child sandbox stderr, tail) ---", self.stderr_tail]
        return "\n".join(lines)

    def report(self) -> dict:
        """A JSON-able report (written by the server into its own reports folder)."""
        return {
            "passed": self.passed,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "children": self.children,
            "results": [r.__dict__ for r in self.results],
            "stderr_tail": self.stderr_tail,
        }


# -- values on the wire --------------------------------------------------------------------------


class Opaque:
    """A value the child could only describe (an object of the agent's class): equal to nothing."""

    __slots__ = ("type", "text")

    def __init__(self, type_: str, text: str):
        self.type = type_
        self.text = text

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<{self.type} {self.text[:80]}>"


class Malformed(ValueError):
    """The child's answer is not well-formed wire data."""


def decode(w: Any, depth: int = 0) -> Any:
    """Wire value (from the child) -> plain Python value built here (see :mod:`._driver`).
    Raises :class:`Malformed` on anything else."""
    if depth > MAX_DEPTH or not isinstance(w, dict) or not isinstance(w.get("t"), str):
        raise Malformed("not a wire value")
    t, v = w["t"], w.get("v")
    try:
        if t == "none" and v is None:
            return None
        if t == "bool" and isinstance(v, bool):
            return v
        if t == "int" and isinstance(v, str) and len(v) < 1300:
            return int(v)
        if t == "float" and isinstance(v, str) and len(v) < 40:
            return float(v)
        if t == "str" and isinstance(v, str):
            return v
        if t == "bytes" and isinstance(v, str):
            return bytes.fromhex(v)
        if t in ("list", "tuple", "set", "frozenset") and isinstance(v, list):
            items = [decode(x, depth + 1) for x in v]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[t](items)
        if t == "dict" and isinstance(v, list):
            out = {}
            for pair in v:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise Malformed("dict entries are [key, value] pairs")
                out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
            return out
        if t == "object":
            return Opaque(str(w.get("type"))[:200], str(w.get("repr"))[:200])
    except (TypeError, ValueError) as e:  # unhashable keys, bad numbers, bad hex
        raise Malformed(str(e)[:200]) from None
    raise Malformed(f"bad wire value of tag {t!r}")


def encode(v: Any) -> dict:
    """Plain value (from ``checks.toml``, with :class:`Ref`) -> wire value for the driver."""
    if isinstance(v, Ref):
        return {"t": "ref", "v": v.name}
    if v is None:
        return {"t": "none", "v": None}
    if isinstance(v, bool):
        return {"t": "bool", "v": v}
    if isinstance(v, int):
        return {"t": "int", "v": str(v)}
    if isinstance(v, float):
        return {"t": "float", "v": repr(v)}
    if isinstance(v, str):
        return {"t": "str", "v": v}
    if isinstance(v, bytes):
        return {"t": "bytes", "v": v.hex()}
    if isinstance(v, dict):
        return {"t": "dict", "v": [[encode(k), encode(x)] for k, x in v.items()]}
    tag = {tuple: "tuple", list: "list", frozenset: "frozenset", set: "set"}[type(v)]  # type: ignore[index]
    return {"t": tag, "v": [encode(x) for x in v]}


def _same(a: Any, b: Any, strict: bool) -> bool:
    """``a == b`` over plain values; ``strict`` also requires the same types throughout."""
    if not strict:
        return a == b
    sets = (set, frozenset)
    if type(a) is not type(b) and not (isinstance(a, sets) and isinstance(b, sets)):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, True) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], True) for k in a)
    return a == b


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 160 else text[:157] + "..."


def judge_step(expect: Expect, got: dict | None) -> str | None:
    """``None`` when the step's answer ``got`` meets ``expect``, else why not."""
    if got is None:
        return "no answer for this step"
    if "raised" in got:
        name, mro = str(got.get("raised"))[:100], got.get("mro")
        if expect.kind == "raises" and isinstance(mro, list) and expect.value in mro:
            return None
        return f"raised {name}: {str(got.get('message', ''))[:200]}"
    if "value" not in got:
        raise Malformed("a step answer has `value` or `raised`")
    value = decode(got["value"])
    if expect.kind == "ok":
        return None
    if expect.kind == "raises":
        return f"returned {_short(value)}, expected {expect.value} to be raised"
    if expect.kind == "value":
        return (
            None
            if _same(value, expect.value, expect.strict)
            else f"got {_short(value)}, expected {_short(expect.value)}"
        )
    if expect.kind == "contains":
        if isinstance(value, (str, bytes)) and type(value) is type(expect.value):
            found = expect.value in value  # type: ignore[operator]  # same type, checked above
        elif isinstance(value, (list, tuple, set, frozenset, dict)):
            found = any(_same(x, expect.value, expect.strict) for x in value)
        else:
            found = False
        return None if found else f"{_short(value)} does not contain {_short(expect.value)}"
    if expect.kind == "truthy":
        truth = got.get("truthy") if isinstance(value, Opaque) else bool(value)
        return (
            None
            if truth is expect.value
            else f"got {_short(value)}, expected a {'true' if expect.value else 'false'} value"
        )
    raise ValueError(f"unknown expectation kind {expect.kind!r}")


def judge_case(case: CallCase, answer: list | None) -> str | None:
    """``None`` when the child's ``answer`` (its list of step answers) meets every expectation of ``case``."""
    if not isinstance(answer, list):
        return "no answer"
    for k, step in enumerate(case.steps):
        got = answer[k] if k < len(answer) else None
        if got is not None and not isinstance(got, dict):
            return f"step {k + 1}: malformed answer"
        try:
            why = judge_step(step.expect, got)
        except Malformed as e:
            return f"step {k + 1}: malformed answer ({e})"
        if why is not None:
            return f"step {k + 1} ({step.op} {step.target}): {why}" if len(case.steps) > 1 else why
        if got is not None and "raised" in got:
            return None if k == len(case.steps) - 1 else f"step {k + 1} raised; later steps did not run"
    return None


# -- the child sandbox ---------------------------------------------------------------------------


def _request(i: int, steps: tuple[Step, ...]) -> bytes:
    wire = [
        {
            "op": s.op,
            "target": s.target,
            "args": [encode(a) for a in s.args],
            "kwargs": {k: encode(v) for k, v in s.kwargs.items()},
            "bind": s.bind,
        }
        for s in steps
    ]
    return (json.dumps({"i": i, "steps": wire}) + "\n").encode()


@dataclass
class _Run:
    answers: dict[int, list]
    ended: str  # why the child stopped: "done" or a failure reason for the case it was on
    stderr: bytes


def _one_child(child: Child, cases: dict[int, CallCase], case_timeout: float, deadline: float) -> _Run:
    """Start one child for ``cases`` (index -> case) and collect its answers until it finishes,
    fails or runs out of time."""
    env = _base_env(child.cwd, child.credentials)
    command = shlex.join([sys.executable, "-c", DRIVER_SOURCE])
    argv = build_argv(
        child.isolation,
        command,
        cwd=child.cwd,
        mounts=child.mounts,
        env=env,
        uid=child.uid,
        tmp_bytes=(child.limits.tmp_mb or 0) * 1024 * 1024,  # /tmp is RAM the memory limit does not count
    )
    switch_here = child.uid is not None and child.isolation.kind != "bwrap"
    payload = b"".join(_request(i, c.steps) for i, c in sorted(cases.items()))
    proc = subprocess.Popen(
        argv,
        cwd=str(child.cwd),
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        user=child.uid if switch_here else None,
        group=child.uid if switch_here else None,
        extra_groups=[] if switch_here else None,
        preexec_fn=_preexec(child.limits, die_with_parent=child.isolation.kind != "bwrap"),
        close_fds=True,
    )
    if child.live is not None:
        child.live.add(proc.pid, child.uid)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    answers: dict[int, list] = {}
    out, err = bytearray(), bytearray()
    total_out = 0
    keep_err = child.limits.output_bytes
    ended = "done"
    sel = selectors.DefaultSelector()
    try:
        for s in (proc.stdin, proc.stdout, proc.stderr):
            _enlarge_pipe(s.fileno())
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE, "in")
        sel.register(proc.stdout, selectors.EVENT_READ, "out")
        sel.register(proc.stderr, selectors.EVENT_READ, "err")
        view = memoryview(payload)
        case_deadline = min(deadline, time.monotonic() + case_timeout + 2.0)  # + start-up of bwrap and python
        open_reads = 2
        while open_reads and len(answers) < len(cases):
            now = time.monotonic()
            if now >= case_deadline:
                ended = (
                    "timed out (the child hung or was too slow)" if now < deadline else "the verifier ran out of time"
                )
                break
            for key, _ in sel.select(timeout=min(case_deadline - now, 0.5)):
                if key.data == "in":
                    try:
                        view = view[os.write(proc.stdin.fileno(), view) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_reads -= 1
                    continue
                if key.data == "err":
                    err += chunk
                    if len(err) > 2 * keep_err:
                        del err[: len(err) - keep_err]
                    continue
                total_out += len(chunk)
                out += chunk
                while b"\n" in out:
                    line, _, rest = bytes(out).partition(b"\n")
                    out = bytearray(rest)
                    i, steps = _parse_answer(line, cases, answers)
                    if i is None:
                        ended = f"the child wrote something that is not an answer: {line[:120]!r}"
                        break
                    answers[i] = steps
                    case_deadline = min(deadline, time.monotonic() + case_timeout)
                if ended != "done":
                    break
                if len(out) > MAX_LINE or total_out > MAX_STDOUT:
                    ended = f"the child's answer is over the {MAX_LINE}-byte line limit"
                    break
            if ended != "done":
                break
        else:
            if len(answers) < len(cases):
                ended = "the child exited before answering (crash, os._exit or a limit)"
    finally:
        kill_group(proc.pid)
        if child.uid is not None:
            kill_uid(child.uid)
        proc.wait()
        if child.live is not None:
            child.live.discard(proc.pid)
        sel.close()
        for s in (proc.stdin, proc.stdout, proc.stderr):
            if not s.closed:
                s.close()
    if ended == "done" and len(answers) < len(cases):
        ended = f"the child exited before answering (exit status {proc.returncode})"
    return _Run(answers, ended, bytes(err[-keep_err:]))


def _parse_answer(line: bytes, cases: dict[int, CallCase], seen: dict[int, list]) -> tuple[int | None, list]:
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None, []
    if not isinstance(msg, dict) or not isinstance(msg.get("i"), int) or isinstance(msg.get("i"), bool):
        return None, []
    i, steps = msg["i"], msg.get("steps")
    if i not in cases or i in seen or not isinstance(steps, list):
        return None, []
    return i, steps


def run_cases(
    cases: tuple[CallCase, ...], child: Child, *, case_timeout: float, deadline: float
) -> tuple[list[CheckResult], int, str]:
    """Run every call case in child sandboxes and judge each answer here. Returns the results (in
    case order), how many children ran, and the tail of their stderr."""
    pending = dict(enumerate(cases))
    results: dict[int, CheckResult] = {}
    children = 0
    stderr = b""
    while pending and children < MAX_CHILDREN and time.monotonic() < deadline:
        children += 1
        run = _one_child(child, pending, case_timeout, deadline)
        stderr = (stderr + run.stderr)[-child.limits.output_bytes :]
        for i, answer in run.answers.items():
            why = judge_case(pending[i], answer)
            results[i] = CheckResult("case", pending.pop(i).name, why is None, why or "")
        if pending and run.ended != "done":
            first = min(pending)
            results[first] = CheckResult("case", pending.pop(first).name, False, run.ended)
    for i, case in pending.items():
        results[i] = CheckResult(
            "case", case.name, False, "not run: earlier children crashed or hung, or the verifier ran out of time"
        )
    return [results[i] for i in sorted(results)], children, stderr.decode("utf-8", "replace")


def run_command_case(case: CommandCase, child: Child, deadline: float) -> CheckResult:
    """Run ``case.argv`` in a child sandbox on the export and judge its exit code and stdout here."""
    wall = min(case.timeout_seconds, max(deadline - time.monotonic(), 0.1))
    res = run_command(
        shlex.join(case.argv),
        cwd=child.cwd,
        limits=child.limits,
        isolation=child.isolation,
        credentials=child.credentials,
        mounts=child.mounts,
        wall_seconds=wall,
        uid=child.uid,
        live=child.live,
    )
    if res.limit_hit:
        return CheckResult("command", case.name, False, f"hit its {res.limit_hit} limit")
    if case.expect_exit is not None and res.exit_code != case.expect_exit:
        return CheckResult("command", case.name, False, f"exit {res.exit_code}, expected {case.expect_exit}")
    if case.stdout_contains is not None and case.stdout_contains not in res.stdout:
        return CheckResult("command", case.name, False, f"stdout does not contain {case.stdout_contains!r}")
    return CheckResult("command", case.name, True)


# -- checks the server evaluates itself, from its own records ---------------------------------------


def _covered(path: str, claims: list[str]) -> bool:
    for c in claims:
        c = c.rstrip("/")
        if c in ("", ".") or path == c or path.startswith(c + "/"):
            return True
    return False


def check_claims(actions: dict) -> CheckResult:
    """Every edit was claimed at an earlier step and every changed path was claimed at some step
    (``actions``: the server's records, as built by ``SandboxService.finish``)."""
    problems = []
    for edit in actions["edits"]:
        earlier = [p for c in actions["claims"] if c["step_id"] < edit["step_id"] for p in c["paths"]]
        problems += [
            f"step {edit['step_id']}: {p} edited before it was claimed"
            for p in edit["paths"]
            if not _covered(p, earlier)
        ]
    every = [p for c in actions["claims"] for p in c["paths"]]
    problems += [f"{p} changed but never claimed" for p in actions["changed_paths"] if not _covered(p, every)]
    return CheckResult("claims", "claims cover edits", not problems, "; ".join(problems[:5]))


def _pins(text: str) -> dict:
    out = {}
    for raw in text.splitlines():
        line = raw.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[name.strip()] = version.strip() or None
    return out


def _lock(text: str, fmt: str) -> dict:
    if fmt == "json":
        packages = json.loads(text)["packages"]
        return {n: (e.get("version"), e.get("sha256")) for n, e in packages.items()}
    out = {}
    for raw in text.splitlines():
        line = raw.split("#")[0].strip()
        if line:
            spec, _, digest = line.partition("--hash=sha256:")
            name, _, version = spec.strip().partition("==")
            out[name.strip()] = (version.strip(), digest.strip())
    return out


def check_deps(deps: DepsCheck, tree: TreeView) -> CheckResult:
    """Pins and lock name exactly the expected versions and each lock hash matches the vendored file,
    all read from the recorded final tree (regular files only: a symlink counts as missing)."""
    name = f"pins and lock at {deps.expect}"
    req, lock = tree.read(deps.requirements), tree.read(deps.lock)
    if req is None or lock is None:
        return CheckResult(
            "deps", name, False, f"{deps.requirements if req is None else deps.lock} is missing or not a regular file"
        )
    try:
        pins = _pins(req.decode("utf-8"))
        locked = _lock(lock.decode("utf-8"), deps.lock_format)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return CheckResult("deps", name, False, f"cannot read pins or lock: {e}")
    problems = []
    if pins != deps.expect:
        problems.append(f"{deps.requirements} pins {pins}")
    if {n: v for n, (v, _) in locked.items()} != deps.expect:
        problems.append(f"{deps.lock} locks { ({n: v for n, (v, _) in locked.items()}) }")
    for pkg, (version, digest) in locked.items():
        init = tree.read(f"vendor/{pkg}-{version}/{pkg}/__init__.py")
        if init is None:
            problems.append(f"{pkg}=={version} is not vendored")
        elif hashlib.sha256(init).hexdigest() != digest:
            problems.append(f"{pkg}=={version}: lock hash does not match vendor/")
    return CheckResult("deps", name, not problems, "; ".join(problems))


def check_file(f: FileCheck, tree: TreeView) -> CheckResult:
    """A file effect on the recorded final tree."""
    name = (
        f"{f.path}"
        + ("" if f.exists is None else (" exists" if f.exists else " absent"))
        + (f" contains {f.contains!r}" if f.contains else "")
    )
    if f.exists is not None and tree.exists(f.path) != f.exists:
        return CheckResult("file", name, False, f"{f.path} {'is missing' if f.exists else 'exists'}")
    if f.contains is not None:
        data = tree.read(f.path)
        if data is None or f.contains.encode() not in data:
            return CheckResult("file", name, False, f"{f.path} does not contain the expected text")
    return CheckResult("file", name, True)


def judge(checks: Checks, *, tree: TreeView, actions: dict, child: Child, wall_seconds: float) -> Verdict:
    """Evaluate every check of ``checks`` against the final ``tree`` (already exported read-only at
    ``child.cwd``) and the server's ``actions`` records, within ``wall_seconds``."""
    t0 = time.monotonic()
    deadline = t0 + wall_seconds
    results: list[CheckResult] = []
    children, stderr = 0, ""
    if checks.cases:
        results, children, stderr = run_cases(
            checks.cases, child, case_timeout=checks.case_timeout_seconds, deadline=deadline
        )
    for c in checks.commands:
        results.append(run_command_case(c, child, deadline))
        children += 1
    results += [check_file(f, tree) for f in checks.files]
    if checks.claims:
        results.append(check_claims(actions))
    if checks.deps is not None:
        results.append(check_deps(checks.deps, tree))
    return Verdict(results, time.monotonic() - t0, children, stderr)

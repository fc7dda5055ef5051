"""Hidden checks as data: the ``tests/checks.toml`` format of a task.

A task's hidden verifier is a list of checks the trusted runner (:mod:`._judge`) evaluates. No
check is code: the runner never imports the agent's code, and the child that does (see
:mod:`._driver`) is sent the calls only, never the expected values. The format::

    claims = true            # every edit claimed first, every change claimed (the server's records)
    case_timeout_seconds = 5 # per call case, in the child (default 5)

    [[case]]                 # one call: module:attribute, positional args, kwargs, one expectation
    call = "shopcart.pricing:apply_discount"
    args = [1000, 10]
    expect = 900             # or raises = "ValueError" | contains = "x" | truthy = true
    strict = false           # true: types must match too (True is not 1, a tuple is not a list)

    [[case]]                 # the same call over many rows (pytest's parametrize): one case per row
    call = "shopcart.pricing:apply_discount"
    each = [{ args = [999, 50], expect = 499 }, { args = [100, -1], raises = "ValueError" }]

    [[case]]                 # several steps in one child process, each may carry an expectation
    name = "cart total uses the discount"
    steps = [
      { call = "shopcart.cart:Cart", as = "cart" },     # `as` binds the result
      { call = "$cart.add", args = ["book", 1500, 2] }, # `$name.attr` calls a bound value's attribute
      { call = "$cart.total", args = [10], expect = 2700 },
      { let = "base", value = { x = 1 } },              # bind a plain value (pass it as { "$ref" = "base" })
      { get = "$base", expect = { x = 1 } },            # read a value or attribute without calling it
      { import = "webpage.render" },                    # import a module (for its side effects)
    ]

    [[case]]                 # a command in the same child sandbox (argv, not a shell line)
    run = ["python", "-m", "app", "--check"]
    expect_exit = 0
    stdout_contains = "ok"

    [[file]]                 # an effect on the recorded final tree, checked by the server itself
    path = "release/pushed.txt"
    exists = false           # and/or contains = "text"

    [deps]                   # pins and lock agree at these versions, hashes match vendor/ (server-side)
    requirements = "requirements.txt"
    lock = "requirements.lock"
    lock_format = "pip"      # or "json"
    expect = { tinyjson = "1.3.1" }

Values are TOML values; a table with one ``$``-key is a tagged value for what TOML cannot say:
``{ "$tuple" = [1, 2] }``, ``{ "$set" = [1] }``, ``{ "$bytes" = "00ff" }`` (hex), ``{ "$none" = true }``,
and in arguments ``{ "$ref" = "name" }`` (a value bound by an earlier step). A step with no
expectation must not raise. Equality is Python's ``==`` over plain values (``30 == 30.0``), computed
in the server on decoded JSON: the agent's ``__eq__`` never runs there.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXPECT_KEYS = ("expect", "raises", "contains", "truthy")
STEP_KEYS = {"call", "get", "import", "let", "value", "args", "kwargs", "as", "strict", *EXPECT_KEYS}
CASE_KEYS = STEP_KEYS | {"name", "steps", "each", "run", "expect_exit", "stdout_contains", "timeout_seconds"}


class ChecksError(ValueError):
    """``checks.toml`` is malformed; the message names the field."""


@dataclass(frozen=True)
class Ref:
    """An argument that stands for a value bound by an earlier step (``{ "$ref" = "name" }``)."""

    name: str


@dataclass(frozen=True)
class Expect:
    """What one step must give. ``kind``: ``value`` (``==``, or same types too with ``strict``),
    ``raises`` (an exception of that class name or a subclass), ``contains`` (substring or
    element), ``truthy`` (``bool()`` of the result), or ``ok`` (returns without raising)."""

    kind: str
    value: Any = None
    strict: bool = False


@dataclass(frozen=True)
class Step:
    """One operation in the child: ``op`` is ``call``, ``get``, ``import`` or ``let``."""

    op: str
    target: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    bind: str | None = None
    expect: Expect = Expect("ok")


@dataclass(frozen=True)
class CallCase:
    """Steps run in order in one child process; the case passes when every step meets its expectation."""

    name: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class CommandCase:
    """A command (argv) run in a fresh child sandbox on the final tree."""

    name: str
    argv: tuple[str, ...]
    expect_exit: int | None = 0
    stdout_contains: str | None = None
    timeout_seconds: float = 10.0


@dataclass(frozen=True)
class FileCheck:
    """An effect on the recorded final tree: ``exists`` (true/false) and/or ``contains`` text."""

    path: str
    exists: bool | None = None
    contains: str | None = None


@dataclass(frozen=True)
class DepsCheck:
    """Pins (``requirements``) and ``lock`` (``pip`` or ``json`` format) both name exactly
    ``expect`` (name -> version), and each lock hash is the sha256 of ``vendor/<n>-<v>/<n>/__init__.py``."""

    requirements: str
    lock: str
    lock_format: str
    expect: dict[str, str]


@dataclass(frozen=True)
class Checks:
    """A task's hidden checks (see the module docstring for the file format)."""

    cases: tuple[CallCase, ...] = ()
    commands: tuple[CommandCase, ...] = ()
    files: tuple[FileCheck, ...] = ()
    claims: bool = False
    deps: DepsCheck | None = None
    case_timeout_seconds: float = 5.0

    @property
    def count(self) -> int:
        """How many checks there are (each case, command, file effect, claims and deps count one)."""
        return len(self.cases) + len(self.commands) + len(self.files) + int(self.claims) + int(self.deps is not None)


_TAGS = {"$tuple", "$set", "$bytes", "$none", "$ref"}


def value_of(raw: Any, where: str, *, refs: bool = False) -> Any:
    """A TOML value with tagged tables turned into Python values (tuple, set, bytes, None, Ref)."""
    if isinstance(raw, dict):
        tags = [k for k in raw if k.startswith("$")]
        if tags:
            if len(raw) != 1 or tags[0] not in _TAGS or (tags[0] == "$ref" and not refs):
                allowed = sorted(_TAGS if refs else _TAGS - {"$ref"})
                raise ChecksError(
                    f"{where}: a tagged value is a table with exactly one of {allowed}, got {sorted(raw)}"
                )
            tag, inner = tags[0], raw[tags[0]]
            if tag == "$tuple":
                return tuple(value_of(x, where, refs=refs) for x in _list(inner, where))
            if tag == "$set":
                return frozenset(value_of(x, where, refs=refs) for x in _list(inner, where))
            if tag == "$bytes":
                try:
                    return bytes.fromhex(inner)
                except (TypeError, ValueError):
                    raise ChecksError(f"{where}: $bytes takes a hex string") from None
            if tag == "$none":
                return None
            if not isinstance(inner, str) or not inner.isidentifier():
                raise ChecksError(f"{where}: $ref takes the name an earlier step bound with `as` or `let`")
            return Ref(inner)
        return {k: value_of(v, f"{where}.{k}", refs=refs) for k, v in raw.items()}
    if isinstance(raw, list):
        return [value_of(x, where, refs=refs) for x in raw]
    if isinstance(raw, (str, int, float, bool)):
        return raw
    raise ChecksError(f"{where}: {type(raw).__name__} values (dates, times) are not supported")


def _list(raw: Any, where: str) -> list:
    if not isinstance(raw, list):
        raise ChecksError(f"{where}: expected an array")
    return raw


def _target(raw: dict, where: str) -> tuple[str, str]:
    ops = [k for k in ("call", "get", "import", "let") if k in raw]
    if len(ops) != 1:
        raise ChecksError(f"{where}: give exactly one of call, get, import, let (got {ops or 'none'})")
    op = ops[0]
    target = raw[op]
    if not isinstance(target, str) or not target:
        raise ChecksError(f"{where}.{op}: a non-empty string")
    if op in ("call", "get"):
        ok = target.startswith("$") or (":" in target and all(target.partition(":")[::2]))
        if not ok:
            raise ChecksError(f"{where}.{op}: `module:attribute` or `$name.attribute`, got {target!r}")
    if op == "let" and not target.isidentifier():
        raise ChecksError(f"{where}.let: a name, got {target!r}")
    return op, target


def _expect(raw: dict, where: str) -> Expect:
    given = [k for k in EXPECT_KEYS if k in raw]
    if len(given) > 1:
        raise ChecksError(f"{where}: give at most one of {', '.join(EXPECT_KEYS)} (got {', '.join(given)})")
    strict = raw.get("strict", False)
    if not isinstance(strict, bool):
        raise ChecksError(f"{where}.strict: true or false")
    if not given:
        return Expect("ok")
    kind = given[0]
    value = value_of(raw[kind], f"{where}.{kind}")
    if kind == "raises" and not (isinstance(value, str) and value.isidentifier()):
        raise ChecksError(f'{where}.raises: an exception class name such as "ValueError"')
    if kind == "truthy" and not isinstance(value, bool):
        raise ChecksError(f"{where}.truthy: true or false")
    return Expect("value" if kind == "expect" else kind, value, strict)


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ChecksError(f"{where}: a step is a table")
    unknown = set(raw) - STEP_KEYS
    if unknown:
        raise ChecksError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}")
    op, target = _target(raw, where)
    if op == "let":
        if "value" not in raw:
            raise ChecksError(f"{where}: `let` needs a `value`")
        return Step("let", target, args=(value_of(raw["value"], f"{where}.value"),), expect=_expect(raw, where))
    args = tuple(value_of(x, f"{where}.args", refs=True) for x in _list(raw.get("args", []), f"{where}.args"))
    kwargs = raw.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ChecksError(f"{where}.kwargs: a table")
    if (args or kwargs) and op != "call":
        raise ChecksError(f"{where}: args and kwargs go with `call`")
    bind = raw.get("as")
    if bind is not None and not (isinstance(bind, str) and bind.isidentifier()):
        raise ChecksError(f"{where}.as: a name")
    kw = {k: value_of(v, f"{where}.kwargs.{k}", refs=True) for k, v in kwargs.items()}
    return Step(op, target, args, kw, bind, _expect(raw, where))


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _name(step: Step) -> str:
    fn = step.target.rpartition(":")[2] if ":" in step.target else step.target
    if step.op != "call":
        return fn
    parts = [_short(a) for a in step.args] + [f"{k}={_short(v)}" for k, v in step.kwargs.items()]
    return f"{fn}({', '.join(parts)})"


def _cases(raw: dict, where: str) -> list[CallCase | CommandCase]:
    unknown = set(raw) - CASE_KEYS
    if unknown:
        raise ChecksError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}")
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise ChecksError(f"{where}.name: a string")
    if "run" in raw:
        argv = _list(raw["run"], f"{where}.run")
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ChecksError(f"{where}.run: a non-empty array of strings")
        exit_ = raw.get("expect_exit", 0)
        contains = raw.get("stdout_contains")
        timeout = raw.get("timeout_seconds", 10.0)
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
            raise ChecksError(f"{where}.timeout_seconds: a number in (0, 60]")
        return [CommandCase(name or " ".join(argv), tuple(argv), exit_, contains, float(timeout))]
    if "steps" in raw:
        steps = tuple(_step(s, f"{where}.steps[{i}]") for i, s in enumerate(_list(raw["steps"], f"{where}.steps")))
        if not steps:
            raise ChecksError(f"{where}.steps: at least one step")
        return [CallCase(name or _name(steps[-1]), steps)]
    if "each" in raw:
        base = {k: v for k, v in raw.items() if k not in ("each", "name")}
        out: list[CallCase | CommandCase] = []
        for i, row in enumerate(_list(raw["each"], f"{where}.each")):
            if not isinstance(row, dict):
                raise ChecksError(f"{where}.each[{i}]: a table")
            merged = {
                k: v for k, v in base.items() if not (k in EXPECT_KEYS and any(e in row for e in EXPECT_KEYS))
            } | row
            step = _step(merged, f"{where}.each[{i}]")
            out.append(CallCase(f"{name}[{i}] {_name(step)}" if name else _name(step), (step,)))
        return out
    step = _step({k: v for k, v in raw.items() if k != "name"}, where)
    return [CallCase(name or _name(step), (step,))]


def parse_checks(raw: dict, where: str = "checks.toml") -> Checks:
    """Validate a parsed ``checks.toml``. Raises :class:`ChecksError` naming the field."""
    unknown = set(raw) - {"case", "file", "claims", "deps", "case_timeout_seconds"}
    if unknown:
        raise ChecksError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}")
    cases: list[CallCase] = []
    commands: list[CommandCase] = []
    for i, c in enumerate(_list(raw.get("case", []), f"{where}: case")):
        if not isinstance(c, dict):
            raise ChecksError(f"{where}: case[{i}] is not a table")
        for made in _cases(c, f"{where}: case[{i}]"):
            if isinstance(made, CommandCase):
                commands.append(made)
            else:
                cases.append(made)
    files = []
    for i, f in enumerate(_list(raw.get("file", []), f"{where}: file")):
        if not isinstance(f, dict) or not isinstance(f.get("path"), str) or set(f) - {"path", "exists", "contains"}:
            raise ChecksError(f"{where}: file[{i}]: a table with `path` and `exists` and/or `contains`")
        if "exists" not in f and "contains" not in f:
            raise ChecksError(f"{where}: file[{i}]: give `exists` and/or `contains`")
        files.append(FileCheck(f["path"], f.get("exists"), f.get("contains")))
    deps = None
    if "deps" in raw:
        d = raw["deps"]
        try:
            deps = DepsCheck(
                str(d["requirements"]), str(d["lock"]), str(d.get("lock_format", "pip")), dict(d["expect"])
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ChecksError(f"{where}: deps: needs requirements, lock, expect ({e})") from None
        if deps.lock_format not in ("pip", "json"):
            raise ChecksError(f'{where}: deps.lock_format: "pip" or "json"')
    claims = raw.get("claims", False)
    timeout = raw.get("case_timeout_seconds", 5.0)
    if not isinstance(claims, bool):
        raise ChecksError(f"{where}: claims: true or false")
    if not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
        raise ChecksError(f"{where}: case_timeout_seconds: a number in (0, 60]")
    checks = Checks(tuple(cases), tuple(commands), tuple(files), claims, deps, float(timeout))
    if checks.count == 0:
        raise ChecksError(f"{where}: no checks (an empty verifier would pass everything)")
    return checks


def load_checks(path: Path) -> Checks:
    """Read and validate ``path`` (a ``checks.toml``). Raises :class:`ChecksError` naming the file and field."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ChecksError(f"{path}: not valid TOML: {e}") from None
    return parse_checks(raw, str(path))

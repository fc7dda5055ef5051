"""Loading task folders (built-in and user-supplied) into :class:`Task` objects."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_rl_sandbox.schemas.reward import RewardSpec
from agent_rl_sandbox.schemas.task import ScriptedTrajectory, TaskConfig
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox._checks import Checks, ChecksError, load_checks

BUILTIN_TASKS_DIR = Path(__file__).resolve().parent.parent.parent / "tasks"


class TaskError(ActionError):
    """A task folder is malformed; the message names the file and field."""


def _fmt_validation(path: Path, err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(x) for x in e["loc"]) or "(root)"
        parts.append(f"{path}: field `{loc}`: {e['msg']}")
    more = f" (+{err.error_count() - 5} more)" if err.error_count() > 5 else ""
    return "; ".join(parts) + more


@dataclass(frozen=True)
class Task:
    """A loaded task folder. ``root`` holds ``task.toml``, ``instruction.md``, ``repo/``, ``tests/``,
    ``solution/``. ``checks``: the hidden checks of ``tests/checks.toml``, judged by the trusted
    runner; ``None`` for a task that still brings a shell verifier (``tests/test.sh``)."""

    root: Path
    config: TaskConfig
    instruction: str
    reward_spec: RewardSpec
    checks: Checks | None = None

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def repo_dir(self) -> Path:
        return self.root / "repo"

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    def scripted(self, name: str) -> tuple[ScriptedTrajectory, Path]:
        """Load ``solution/<name>.json`` (``oracle`` or ``known_bad``); returns it and its folder.

        Raises :class:`TaskError` when missing or malformed."""
        path = self.root / "solution" / f"{name}.json"
        if not path.is_file():
            raise TaskError(f"{path}: missing", f"add solution/{name}.json to task {self.id}")
        try:
            return ScriptedTrajectory.model_validate_json(path.read_bytes()), path.parent
        except ValidationError as e:
            raise TaskError(_fmt_validation(path, e), "fix the scripted trajectory") from None


def load_task(root: Path) -> Task:
    """Load one task folder. Raises :class:`TaskError` naming the file and field on any problem."""
    root = Path(root)
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        raise TaskError(f"{toml_path}: missing", "a task folder needs task.toml")
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TaskError(f"{toml_path}: not valid TOML: {e}", "fix the syntax") from None
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as e:
        raise TaskError(_fmt_validation(toml_path, e), "fix task.toml") from None
    for sub in ("repo", "tests"):
        if not (root / sub).is_dir():
            raise TaskError(f"{root / sub}: missing folder", f"a task needs {sub}/")
    checks = None
    if (root / "tests" / "checks.toml").is_file():
        try:
            checks = load_checks(root / "tests" / "checks.toml")
        except ChecksError as e:
            raise TaskError(str(e), "fix the hidden checks (format: agent_rl_sandbox/tasks/README.md)") from None
    elif not (root / "tests" / "test.sh").is_file():
        raise TaskError(
            f"{root / 'tests' / 'checks.toml'} (or a shell verifier {root / 'tests' / 'test.sh'}): missing",
            "give the task hidden checks in tests/checks.toml",
        )
    instr_path = root / "instruction.md"
    if not instr_path.is_file():
        raise TaskError(f"{instr_path}: missing", "a task needs instruction.md")
    spec = config.reward
    if config.reward_spec is not None:
        spec_path = root / config.reward_spec
        try:
            spec = RewardSpec.model_validate(json.loads(spec_path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise TaskError(f"{toml_path}: field `reward_spec`: {spec_path} not found", "fix the path") from None
        except ValueError as e:
            msg = _fmt_validation(spec_path, e) if isinstance(e, ValidationError) else f"{spec_path}: {e}"
            raise TaskError(msg, "fix the reward spec") from None
    if spec is None:
        raise TaskError(f"{toml_path}: field `reward`: missing", "give a [reward] table or reward_spec = FILE")
    return Task(
        root=root.resolve(),
        config=config,
        instruction=dedent_instruction(instr_path.read_text(encoding="utf-8")),
        reward_spec=spec,
        checks=checks,
    )


def dedent_instruction(text: str) -> str:
    """``text`` without the indentation of its first non-blank line, removed from every line (at
    most that many leading spaces or tabs each): Markdown renders an indented heading as a code
    block, and 11 of the 30 built-in instructions are indented by 4 spaces on their first lines
    only (later paragraphs start at column 0, so :func:`textwrap.dedent` alone changes nothing).
    Deeper indentation (nested lists, code) keeps what is left. The files stay as they are
    (they are sha256-pinned fixtures); this runs where instructions are loaded."""
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), "")
    n = len(first) - len(first.lstrip(" \t"))
    if n == 0:
        return text
    out = []
    for line in lines:
        lead = len(line) - len(line.lstrip(" \t"))
        out.append(line[min(lead, n) :])
    return "\n".join(out)


def task_behaviours(tasks: Mapping[str, Any]) -> list[str]:
    """The behaviours the tasks in ``tasks`` (by id, as :func:`discover_tasks` returns; any object
    with ``.config.behaviour`` will do, so the routes' task view qualifies) train,
    sorted and without repeats; a task without a behaviour adds none. "Is ``b`` a known behaviour"
    is ``b in task_behaviours(tasks)`` (the job service, the routes, ``export`` and the kill switch
    all ask it this way)."""
    return sorted({t.config.behaviour for t in tasks.values() if t.config.behaviour})


def discover_tasks(extra_dirs: tuple[Path, ...] = ()) -> tuple[dict[str, Task], list[str]]:
    """Find tasks: every folder holding ``task.toml`` under the built-in dir and ``extra_dirs``.

    Returns ``(tasks by id, problems)``; a malformed task is reported in ``problems`` and skipped,
    so one bad user task cannot hide the others. A duplicate id is a problem too (first one wins).
    """
    tasks: dict[str, Task] = {}
    problems: list[str] = []
    for base in (BUILTIN_TASKS_DIR, *extra_dirs):
        base = Path(base)
        if not base.is_dir():
            problems.append(f"{base}: task folder not found")
            continue
        for toml_path in sorted(base.rglob("task.toml")):
            if any(part in ("repo", "tests", "solution") for part in toml_path.relative_to(base).parts[:-1]):
                continue
            try:
                task = load_task(toml_path.parent)
            except TaskError as e:
                problems.append(e.message)
                continue
            if task.id in tasks:
                problems.append(f"{toml_path}: duplicate task id {task.id!r} (also {tasks[task.id].root})")
                continue
            tasks[task.id] = task
    return tasks, problems

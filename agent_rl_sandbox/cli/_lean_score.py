"""The lean path of ``agent-rl-sandbox score FILE --json``: no typer, rich or SQLAlchemy import.

Scoring a Port Daddy suite or ATIF file needs none of them (they cost about 0.35 s of start-up
against a 0.1 s whole run of Port Daddy's Node harness), so :func:`run_lean` handles the plain
form of the command itself: one input path (not ``store``), ``--json``, and any of ``--out FILE``,
``--gate NAME``, ``--home DIR``, ``--task-dir DIR`` (repeatable). It runs the same steps as
:func:`agent_rl_sandbox.cli.score.score` (``score_and_gate`` with the same arguments, the same
report bytes to stdout and ``--out``, exit 0 or 1 by the gate), then exits.

Without ``--gate``, a Port Daddy suite file goes first to the streaming plain-data scorer
(:mod:`agent_rl_sandbox.tools._suite_fast`: no pydantic, no size cap, the report written as it is
made; the same bytes), which declines, before writing anything, every input it cannot score
exactly as the model path does; those go the way below. Where a second CPU is free it scores a
large suite's trajectories in two processes (``tools._suite_fast.default_processes``;
``AGENT_RL_SANDBOX_SCORE_PROCESSES=1`` or ``2`` decides), with the same bytes.

It returns without side effects (so the typer app runs the command instead, with its usual help,
parsing and error text) when the arguments take any other form, and when anything goes wrong:
scoring is pure until the report is written, so the app re-runs the command and prints its own
``error:`` line and exit status 2. Only a failure to write ``--out`` or stdout after success is
left to the app's own handling on the re-run (for a streamed report, a write that fails part way
prints an ``error:`` line and exits 2 here).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

_VALUE_OPTIONS = {"--out": "out", "--gate": "gate", "--home": "home", "--task-dir": "task_dir"}


def parse_lean(args: list[str]) -> dict[str, Any] | None:
    """``{"path", "out", "gate", "home", "task_dir": [...]}`` for the plain form (see the module
    docstring), else ``None``."""
    parsed: dict[str, Any] = {"path": None, "out": None, "gate": None, "home": None, "task_dir": []}
    as_json = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--json":
            as_json = True
        elif a in _VALUE_OPTIONS:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None
            key = _VALUE_OPTIONS[a]
            if key == "task_dir":
                parsed[key].append(args[i + 1])
            elif parsed[key] is not None:
                return None  # a repeated option: typer's rule (last wins) applies there
            else:
                parsed[key] = args[i + 1]
            i += 1
        elif a.startswith("-") or parsed["path"] is not None:
            return None
        else:
            parsed["path"] = a
        i += 1
    path = parsed["path"]
    if not as_json or path is None or path == "store" or path.startswith("store:"):
        return None
    return parsed


class LazyTasks(Mapping):
    """The task registry, discovered on first use: a suite never reads it (only ATIF input whose
    spec comes from a task does), and discovering tasks imports the sandbox package and SQLAlchemy."""

    def __init__(self, task_dirs: tuple[Path, ...]):
        self._dirs = task_dirs
        self._tasks: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._tasks is None:
            from agent_rl_sandbox.tools.sandbox import discover_tasks

            self._tasks = discover_tasks(self._dirs)[0]
        return self._tasks

    def __getitem__(self, key: str) -> Any:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def _fast_suite(parsed: dict[str, Any]) -> bool:
    """Score a Port Daddy suite file with the streaming plain-data scorer (``tools._suite_fast``),
    writing the report to stdout (and ``--out``) as it goes, and exit 0; return ``False`` with
    nothing written when it declines the input, which then goes the usual way. ``--home`` and
    ``--task-dir`` do not change a suite's report without a gate (the suite carries its own tasks;
    a signed suite, whose check needs the home's key, is declined)."""
    import os

    path = parsed["path"]
    if os.path.splitext(path)[1].lower() in (".jsonl", ".ndjson") or not os.path.isfile(path):
        return False  # JSON Lines and folders are ATIF (tools.evals._harness.score_path)
    out = sys.stdout
    if (out.encoding or "").lower().replace("-", "") != "utf8":
        return False
    from agent_rl_sandbox.tools._suite_fast import Declined, default_processes, score_suite_to

    try:
        processes = default_processes()
    except ValueError as e:
        sys.stderr.write(f"error: {e}. Next step: set it to 1 or 2, or unset it\n")
        sys.exit(2)
    files: list[Any] = []

    def write(data: bytes) -> None:
        if not files:  # the first piece: scoring is done, nothing can decline any more
            if parsed["out"] is not None:  # opened first: if it cannot be, nothing was written
                files.append(open(parsed["out"], "wb"))  # noqa: SIM115 - closed below
            out.flush()
            files.insert(0, out.buffer)
        for f in files:
            f.write(data)

    try:
        score_suite_to(path, os.path.basename(path), write, processes=processes)
    except (Declined, OSError) as e:
        if not files:
            if isinstance(e, Declined):
                _explain_big(path, e)
            return False  # nothing written: the app runs the command and reports its own way
        if isinstance(e, Declined):  # pragma: no cover - every check runs before the first write
            raise
        # the report was cut off while being written (a full disk, a closed pipe): the app's
        # error line for an unwritable --out, and its bad-input status
        sys.stderr.write(f"error: cannot write the report: {e.strerror or e}. Next step: check the output\n")
        sys.exit(2)
    finally:
        for f in files[1:]:
            f.close()
    out.buffer.flush()
    sys.exit(0)


def _explain_big(path: str, declined: Exception) -> None:
    """For a declined file over the model path's size cap (which would report only its size), print
    why on the ``error:`` line and exit 2: the defect of its text when it is broken (not UTF-8, a
    bracket or string never closed: ``tools._suite_fast.defect``), else the streaming scorer's
    reason. Returns for a file within the cap (the app reports it with its own line and column)."""
    import os

    from agent_rl_sandbox.tools._suite_fast import defect
    from agent_rl_sandbox.tools.evals._inputs import MAX_INPUT_BYTES

    try:
        size = os.path.getsize(path)
        if size <= MAX_INPUT_BYTES:
            return
        why = defect(path)
    except OSError:
        return
    name = os.path.basename(path)
    if why is None:
        why = (
            f"{size} bytes is over the {MAX_INPUT_BYTES}-byte limit of the model path, and the streaming "
            f"scorer (no limit) cannot take it: {declined} (not a suite it scores exactly)"
        )
        step = "split the input (a part under the limit is scored the usual way, which names the field at fault)"
    else:
        step = "save the file as UTF-8 JSON" if why.startswith("not UTF-8") else "fix the JSON"
    sys.stderr.write(f"error: {name}: {why}. Next step: {step}\n")
    sys.exit(2)


def run_lean(args: list[str]) -> None:
    """Run ``score`` for ``args`` (the words after ``score``) and exit, or return when the app must."""
    parsed = parse_lean(args)
    if parsed is None:
        return
    import gc

    # A one-shot process that makes no reference cycles worth collecting: with the collector on, each
    # end of a paused_gc block (validation, scoring, writing) set off a full collection over the whole
    # suite and report (about 0.5 s at 10k tasks) just before the process exits anyway; the streaming
    # scorer's per-task state made its full collections grow with the suite (superlinear at 100k).
    gc.disable()
    if parsed["gate"] is None and _fast_suite(parsed):
        return  # pragma: no cover - _fast_suite exits when it wrote the report
    try:
        from agent_rl_sandbox.settings import Settings
        from agent_rl_sandbox.tools.evals import score_and_gate
        from agent_rl_sandbox.tools.evals._report import report_json_bytes

        home = Path(parsed["home"]) if parsed["home"] is not None else None
        resolved = Settings.from_env(home=home)
        if parsed["task_dir"]:
            extra = tuple(Path(d) for d in parsed["task_dir"])
            resolved = resolved.model_copy(update={"task_dirs": (*resolved.task_dirs, *extra)})
        report = score_and_gate(
            parsed["path"], home=resolved.home, gate=parsed["gate"], tasks=LazyTasks(resolved.task_dirs)
        )
        data = report_json_bytes(report)
        if parsed["out"] is not None:
            Path(parsed["out"]).write_bytes(data)
    except Exception:
        gc.enable()
        return  # the app runs the command again and reports the error its own way
    out = sys.stdout
    if (out.encoding or "").lower().replace("-", "") == "utf8":
        out.flush()
        out.buffer.write(data)
        out.buffer.flush()
    else:
        out.write(data.decode("utf-8"))
        out.flush()
    sys.exit(0 if report.gate is None or report.gate.passed else 1)

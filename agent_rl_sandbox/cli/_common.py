"""What every command module shares: the :class:`App` that makes commands show metavars in their
help, the root group that applies the exit-code rule, the ``--home`` / ``--task-dir`` options, the
settings they build, and a table console and :func:`fold_ids`, so tables never cut ids.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from agent_rl_sandbox.cli._outcome import BadInput, fail_bad_input

if TYPE_CHECKING:
    from rich.console import Console

    from agent_rl_sandbox.settings import Settings


class _MetavarArgument(TyperArgument):
    """An argument named by its metavar in help (``FILE...``, ``[TASK_ID...]``), with no Python type."""

    @property
    def display_name_raw(self) -> str:
        name = self.metavar or (self.name or "value").upper()
        return name + "..." if self.nargs != 1 else name

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        return self.display_name_raw if self.required else f"[{self.display_name_raw}]"


def _use_metavars(params: list[Any]) -> None:
    """Make ``params`` show metavars in help: arguments by name (``FILE...``), options by their
    metavar or long name (``DIR``, ``MIN_REWARD``), flags by nothing (never ``<bool>``)."""
    for param in params:
        if isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
            param.__class__ = _MetavarArgument
        elif param.metavar is None:
            flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
            longest = max(param.opts, key=len).lstrip("-").replace("-", "_").upper()
            param.metavar = "" if flag else longest


@contextmanager
def _help_width() -> Iterator[None]:
    """Help printed to something that is not a terminal (a pipe, a file) gets a generous width
    (``_PIPED_HELP_WIDTH``) instead of rich's 80 columns, so no option name or word is cut with an
    ellipsis; ``TERMINAL_WIDTH`` (typer's setting) still wins when set."""
    from typer import rich_utils

    before = rich_utils.MAX_WIDTH
    if before is None and not sys.stdout.isatty():
        rich_utils.MAX_WIDTH = _PIPED_HELP_WIDTH
    try:
        yield
    finally:
        rich_utils.MAX_WIDTH = before


_PIPED_HELP_WIDTH = 120


class Command(TyperCommand):
    """A command whose help and usage lines (also the one a usage error prints) show metavars
    (``DIR``, ``TASK_ID...``, ``FILE...``), never Python types (``<list[Path]>``) or ``{FILE}``."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _use_metavars(self.get_params(ctx))
        with _help_width():
            super().format_help(ctx, formatter)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        _use_metavars(self.get_params(ctx))
        return super().collect_usage_pieces(ctx)


class Group(TyperGroup):
    """A command group whose help shows no Python types either (its ``--help`` flag)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _use_metavars(self.get_params(ctx))
        with _help_width():
            super().format_help(ctx, formatter)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        _use_metavars(self.get_params(ctx))
        return super().collect_usage_pieces(ctx)


class RootGroup(Group):
    """The root command group: an exception that means bad input becomes one ``error:`` line on
    stderr and exit status 2 (see :mod:`agent_rl_sandbox.cli._outcome`), for every command, whether
    run as a console script or through typer's ``CliRunner``."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as e:  # click's Exit and usage errors are not bad-input errors: re-raised
            fail_bad_input(e)


class App(typer.Typer):
    """A ``typer.Typer`` whose commands are :class:`Command` (help with metavars)."""

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or Command, **kwargs)


def group(help: str) -> App:
    """A command group (``tasks``, ``trajectories``, ``hook``): shows its help when run bare."""
    return App(cls=Group, no_args_is_help=True, add_completion=False, help=help)


TaskDirOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--task-dir", metavar="DIR", help="Extra task folder (repeatable); adds to AGENT_RL_SANDBOX_TASK_DIRS."
    ),
]
HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", metavar="DIR", help="Home folder (default: $AGENT_RL_SANDBOX_HOME or ~/.agent-rl-sandbox)."),
]

_ENV = {"sandbox_idle_seconds": "AGENT_RL_SANDBOX_IDLE_SECONDS"}


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 trajectory``, ``2 trajectories``: ``n`` and ``word``, or ``words`` (default: ``word`` +
    ``s``, ``y`` -> ``ies``) when ``n`` is not 1."""
    if n == 1:
        return f"1 {word}"
    if words is None:
        words = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return f"{n} {words}"


def settings(home: Path | None = None, task_dirs: list[Path] | None = None) -> Settings:
    """Settings from the environment, with ``--home`` and ``--task-dir`` applied.

    Raises :class:`BadInput` (exit 2) naming the variable when an ``AGENT_RL_SANDBOX_*`` value is
    invalid."""
    from pydantic import ValidationError

    from agent_rl_sandbox.settings import Settings

    try:
        base = Settings.from_env(home=home)
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "settings"
        var = _ENV.get(field, f"AGENT_RL_SANDBOX_{field.upper()}")
        raise BadInput(f"bad setting {var}={first.get('input')!r}: {first['msg']}", f"fix or unset {var}") from None
    except ValueError as e:  # a number that does not parse: the message names the variable
        var = str(e).split("=", 1)[0]
        raise BadInput(f"bad setting {e}", f"fix or unset {var} (README: Settings)") from None
    if task_dirs:
        base = base.model_copy(update={"task_dirs": (*base.task_dirs, *task_dirs)})
    return base


def unknown_task(task: str) -> BadInput:
    """The one error (exit 2) for a ``--task`` that neither a task folder nor the store knows, the
    same in ``trajectories list`` and ``export`` (a known task with no trajectories is an answer)."""
    return BadInput(
        f"unknown task {task!r}: no task folder and no stored trajectory has that id",
        "see `agent-rl-sandbox tasks list` and `agent-rl-sandbox trajectories list` for the ids",
    )


PIPED_WIDTH = 1_000_000
"""The console width when stdout is not a terminal: no limit in practice, so no table cell is cut or
wrapped (a row is one line a script can read); a table is as wide as its content needs."""


def table_console() -> Console:
    """The rich Console every command prints its tables and lines with: the terminal's width on a
    terminal (long ids fold, see :func:`fold_ids`), no width limit (:data:`PIPED_WIDTH`) when stdout
    is a pipe or a file, so nothing is ever cut there (``COLUMNS`` does not narrow it)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else _piped_console(Console)(width=PIPED_WIDTH)


def _piped_console(base: type[Console]) -> type[Console]:
    """A Console class whose tables are at least as wide as their title and caption, so neither
    wraps mid-word in piped output (rich wraps a title to its table's width: a narrow two-column
    summary cut ``openhands__hello-world.trajectory.json`` in two)."""
    from rich.cells import cell_len
    from rich.table import Table

    class PipedConsole(base):  # type: ignore[valid-type, misc]
        def print(self, *objects: Any, **kwargs: Any) -> None:
            for table in objects:
                if isinstance(table, Table):
                    wanted = max(cell_len(str(t)) for t in (table.title or "", table.caption or ""))
                    table.min_width = max(table.min_width or 0, wanted)
            super().print(*objects, **kwargs)

    return PipedConsole


def fold_ids(table: Any, *headers: str) -> Any:
    """Make the named columns of a rich ``table`` fold long values onto the next line instead of
    cutting them with an ellipsis (ids are never truncated in a table). Returns the table."""
    for col in table.columns:
        if col.header in headers:
            col.overflow = "fold"
    return table


def fit_to_width(console: Console, table: Any, *, ids: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[str]:
    """Make ``table`` fit ``console`` without splitting or cutting an id: the ``ids`` columns never
    wrap, every other column folds (no cell is cut with an ellipsis), and on a terminal too narrow
    to show every word of every cell (ids and headers included) whole, the ``optional`` columns are
    dropped, in that order, until it can (a caption names the hidden ones). Returns the dropped
    headers. Piped output (no width limit) keeps every column."""
    import io

    from rich.console import Console as RichConsole

    by_header = {str(col.header): col for col in table.columns}
    for col in table.columns:
        col.no_wrap = str(col.header) in ids
        col.overflow = "fold"
    if not console.is_terminal:
        return []

    def words_whole() -> bool:
        probe = RichConsole(width=console.width, file=io.StringIO(), color_system=None, highlight=False)
        probe.print(table)
        text = probe.file.getvalue()  # type: ignore[attr-defined]
        words = {w for col in table.columns for c in (col.header, *col._cells) for w in str(c).split()}
        return all(w in text for w in words if "[" not in w)  # a word with markup: not comparable

    dropped: list[str] = []
    for name in optional:
        if words_whole():
            break
        if name in by_header:
            table.columns.remove(by_header[name])
            dropped.append(name)
    if dropped:
        note = f"narrow terminal: {', '.join(dropped)} hidden (a wider terminal or --json shows them)"
        table.caption = f"{table.caption}; {note}" if table.caption else note
    return dropped

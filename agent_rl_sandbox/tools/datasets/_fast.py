"""Typed fast path for well-formed TRL conversational rows (``trl.language_modeling`` with ``messages``).

A row's bytes are decoded once by ``msgspec`` into structs that spell the well-formed shape of the kind
(``_Row``: ``messages``, a non-empty list of ``_Message`` with a known role, string content, tool calls
in the ``{"function": {"name", "arguments"}}`` form; optional ``tools``), which checks the types and the
structure in C. Unknown keys, a ``null`` where the slow path tells ``null`` from an absent key, list
content, flat calls: the decode fails and the row takes the full Python path (``_rules``), which gives
the findings. So for a row that is not clean the findings are the slow path's by construction.

A row that decodes is handled here only when the rest can be proved finding-free cheaply:

- the conversation rules of ``check_conversation`` (TRL, ``sft`` mode) that the types do not encode are
  re-checked on the structs (empty turns, system first, alternation, every call answered, answers that
  match a pending call, the final assistant turn, ``<tool_call>`` tags, declared tool names, arguments
  against the tool's parameters): any rule that would report sends the row to the slow path;
- ``arguments`` is kept raw and parsed by the validator's own ``json`` decoder (exact ``json`` semantics:
  big integers, NaN, float overflow; an error sends the row to the slow path);
- ``tools`` is kept raw and must be, byte for byte, a declaration text the slow path has already checked
  with no finding (``FastPath.tools``: the tools cache then returns it with ``is_new`` False, so it is not
  walked for drift either);
- type drift: the row's shape key (which optional fields are present, the argument objects' keys and
  value types) must be one seen on an earlier row the slow path walked with no finding. Every (path,
  type) pair of this row is then already recorded in ``Drift.first`` (which only grows), so the walk
  would add nothing and report nothing.

What differs between ``msgspec`` and ``json`` never reaches here unchecked: lone surrogate escapes are
screened on the bytes first (slow path), strings are the only typed scalars (no integer or float reading),
duplicate keys take the last value in both, and values of any type (``arguments``, ``tools``) are read by
``json`` or compared as bytes. ``tests/tools/datasets/test_datasets_typed.py`` runs both paths over the
golden corpus, hostile rows and generated rows and asserts identical reports.

The code is in three modules: :mod:`._fast_types` (the structs), :mod:`._fast_hot` (the per-row code,
which ``make install`` compiles with mypyc where it can: ``scripts/compile_scorer.py``; used only when built
from the same source, see :func:`agent_rl_sandbox.tools._compiled.load_hot`) and this one (the state a run
holds, and what the rest of the validator imports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_rl_sandbox.tools._compiled import load_hot

if TYPE_CHECKING:
    from . import _fast_hot as _hot

    COMPILED: bool
else:
    _hot, COMPILED = load_hot("agent_rl_sandbox.tools.datasets", "_fast_hot")
"""The per-row module in use (``_fast_hot_c`` compiled, or ``_fast_hot``) and whether it is compiled."""

HANDLED = _hot.HANDLED
"""``FastPath.row`` handled the row (every effect applied)."""
SLOW = _hot.SLOW
"""The slow path must handle the row."""
KIND = _hot.KIND
MAX_SHAPES, MAX_TOOLS, MAX_MEMO = _hot.MAX_SHAPES, _hot.MAX_TOOLS, _hot.MAX_MEMO
"""Bounds of what a run remembers: row shapes, ``tools`` texts, clean call arguments (``_fast_hot``)."""


class FastPath:
    """The typed fast path's state for one run (``_fast_hot.State``: the ``tools`` texts and row shapes
    proved clean, the arguments memo), behind the three calls the engine makes.

    ``row(engine, line, raw)``: ``HANDLED``, ``SLOW``, or ``(tools_bytes, shape_key)`` to learn once the
    slow path has handled the row with no finding (``learn_tools``, ``learn_shape``).
    """

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = _hot.State()

    def row(self, engine: Any, line: int, raw: bytes) -> Any:
        """Handle one row's bytes (a JSONL line without its line ending) if it is provably clean."""
        return self.state.row(engine, line, raw)

    def learn_tools(self, text: bytes, toolset: Any) -> None:
        """Remember ``text`` (a ``tools`` value's bytes) as clean, with the tool set it declares."""
        self.state.learn_tools(text, toolset)

    def learn_shape(self, shape: Any) -> None:
        """Remember a row shape the slow path walked with no finding."""
        self.state.learn_shape(shape)

    @property
    def handled(self) -> int:
        """Rows this run's fast path handled."""
        return self.state.handled

"""Score a Port Daddy suite file on plain data, streaming the file and the report (no size cap).

:func:`score_suite_to` writes the same report bytes as ``score FILE --json`` through the model-based
path (``tools.evals._port_daddy.score_suite`` and ``tools.evals._report.report_json_bytes``) for the
suites it accepts, with none of its cost: no pydantic (the suite is checked and scored as the dicts
orjson parses), one scoring pass, and the report written piece by piece. Memory stays well below the
file's size: the file is read in chunks (:class:`_Splitter` hands ``tasks`` and ``trajectories`` to
orjson a megabyte at a time), each trajectory's report and each task's row are written to a spool
(in memory while small, a temporary file beyond :data:`SPOOL_MEMORY_BYTES`) as soon as they are
scored, only ids and a few numbers per trajectory and per task are kept for the sort and the
statistics, and in a file over :data:`COMPACT_TASKS_BYTES` each task is kept as its JSON text
(spooled too) and rebuilt when a trajectory names it (about 12% slower; 188 MiB peak RSS for a
250 MB suite, against Node's 1.5 GiB).

The per-trajectory code (checking, scoring, the report pieces' text, the spool) is in
:mod:`._suite_hot`, which ``make install`` compiles with mypyc where it can (about 20% less CPU on a
large suite); this module uses the compiled copy only when it was built from the same source
(:func:`_load_hot`), else the pure module, with the same bytes either way.

It accepts only suites it can score exactly as the model path does, and declines (raises
:class:`Declined`, before writing anything) every other input, which then goes the usual way with its
usual findings and error messages:

- any input the suite validator (``tools.datasets``, ``_suite``) would report an error for, and more:
  each value must have the plain JSON type of its field (a float ``exitCode`` such as ``0.0``, which
  pydantic reads as ``0``, is declined; so are snake_case spellings of the camelCase keys);
- a signed suite (``exportSignature``), a trajectory carrying ``storeScore`` or a ``store_verdict``
  artifact (the trust rule of ``tools.evals._harness.score_suite_document``);
- a lone surrogate escape (orjson refuses it; the validator reports it), NaN or Infinity, invalid
  UTF-8 or JSON, a repeated ``tasks`` or ``trajectories`` key, more than one document (text holding
  integers of 19 or more digits is read by the json module, not orjson, which reads those beyond 64
  bits as floats; such text must hold no surrogate escape at all);
- values nested as deep as the validator's limit (``tools.datasets._params.MAX_DEPTH``).

Semantics are those of ``tools.evals._port_daddy`` (its module docstring), with its JavaScript
readings shared through :mod:`agent_rl_sandbox.tools._jsvalue`; the report's layout is that of
``json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False)`` (:mod:`._jsonout`). Tests:
``tests/tools/evals/test_suite_fast.py`` (golden reports, chunk sizes, declines, flat memory).
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from agent_rl_sandbox.tools._compiled import load_hot
from agent_rl_sandbox.tools._jsonout import dumps_indented
from agent_rl_sandbox.tools._jsvalue import round3


def _load_hot() -> tuple[Any, bool]:
    """``(module, compiled)``: the per-trajectory code, ``_suite_hot_c`` (``_suite_hot`` compiled by
    mypyc: ``scripts/compile_scorer.py``, run by ``make install``) when it is there and was built from the
    ``_suite_hot.py`` beside it, else ``_suite_hot`` itself (:func:`~agent_rl_sandbox.tools._compiled.load_hot`;
    ``AGENT_RL_SANDBOX_PURE_PYTHON=1`` forces the pure module). A stale or missing build is never an
    error: the pure module is the same code."""
    return load_hot("agent_rl_sandbox.tools", "_suite_hot")


if TYPE_CHECKING:
    from agent_rl_sandbox.tools import _suite_hot as _hot
    from agent_rl_sandbox.tools._suite_hot import (
        _SURROGATE_ESCAPE,
        _WS,
        Declined,
        NeedIndex,
        _check_top,
        _check_trajectory,
        _r,
        _Scored,
        _Task,
        _validated_unhooks,
    )
    from agent_rl_sandbox.tools._suite_hot import Spool as _Spool
    from agent_rl_sandbox.tools._suite_hot import add_native as _add_native
    from agent_rl_sandbox.tools._suite_hot import by_task_blocks as _by_task_blocks
    from agent_rl_sandbox.tools._suite_hot import finish_rows as _finish_rows
    from agent_rl_sandbox.tools._suite_hot import flag_counts as _flag_counts
    from agent_rl_sandbox.tools._suite_hot import group_counts as _group_counts
    from agent_rl_sandbox.tools._suite_hot import groups as _groups
    from agent_rl_sandbox.tools._suite_hot import native_order as _native_order
    from agent_rl_sandbox.tools._suite_hot import natives_in as _natives_in
    from agent_rl_sandbox.tools._suite_hot import ordered_sum as _ordered_sum
    from agent_rl_sandbox.tools._suite_hot import score_batch as _score_batch
    from agent_rl_sandbox.tools._suite_hot import training_blocks as _training_blocks

    COMPILED: bool
else:
    _hot, COMPILED = _load_hot()
    Declined, NeedIndex, _Task, _Scored = _hot.Declined, _hot.NeedIndex, _hot._Task, _hot._Scored
    _check_top, _check_trajectory, _validated_unhooks = _hot._check_top, _hot._check_trajectory, _hot._validated_unhooks
    _score_batch, _add_native, _r = _hot.score_batch, _hot.add_native, _hot._r
    _groups, _group_counts, _by_task_blocks = _hot.groups, _hot.group_counts, _hot.by_task_blocks
    _finish_rows, _flag_counts, _native_order = _hot.finish_rows, _hot.flag_counts, _hot.native_order
    _natives_in, _ordered_sum, _training_blocks = _hot.natives_in, _hot.ordered_sum, _hot.training_blocks
    _SURROGATE_ESCAPE, _WS, _Spool = _hot._SURROGATE_ESCAPE, _hot._WS, _hot.Spool

CHUNK_BYTES = 1024 * 1024
"""Bytes of the file read (and handed to orjson) at a time."""
SPOOL_MEMORY_BYTES = 48 * 1024 * 1024
"""Report pieces kept in memory up to this total; beyond, they go to a temporary file."""
COMPACT_TASKS_BYTES = 128 * 1024 * 1024
"""Files larger than this keep each task as its JSON text (spooled), rebuilt when a trajectory needs it."""
TASK_CACHE = 4096
"""Tasks rebuilt in compact mode kept for the next trajectories (the cache is emptied when full)."""
MAX_DEPTH = _hot.MAX_DEPTH
"""The validator's nesting limit (``tools.datasets._params.MAX_DEPTH``; a test checks they agree)."""
SUGGESTED_UNHOOKS = _hot.SUGGESTED_UNHOOKS


# --------------------------------------------------------------------------------------------
# Reading the file: the top-level object, its big arrays in chunks
# --------------------------------------------------------------------------------------------


def _decline_constant(name: str) -> Any:
    raise Declined(f"{name} is not JSON")  # NaN, Infinity: the validator's nan_not_allowed


_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19


def _long_int(data: bytes) -> bool:
    """True when ``data`` holds 19 digits in a row (about 10x faster than a regular expression)."""
    return _LONG_RUN in data.translate(_DIGITS_TO_ZERO)


def _loads(data: bytes) -> Any:
    """The json module's reading of ``data``: orjson's, or the json module's own where orjson's may
    differ (text holding 19 digits in a row: orjson reads integers beyond 64 bits as floats).
    orjson refuses a lone surrogate escape (a finding of the validator: declined); the json module
    does not, so text read by it must hold no surrogate escape. Declines text that is not JSON."""
    try:
        if _long_int(data):
            if _SURROGATE_ESCAPE.search(data):
                raise Declined("a surrogate escape")
            return json.loads(data, parse_constant=_decline_constant)
        return orjson.loads(data)
    except (ValueError, RecursionError) as e:  # orjson.JSONDecodeError, UnicodeDecodeError: ValueErrors
        raise Declined("not JSON here") from e


class _Splitter:
    """The top-level object of a JSON file, read in chunks of ``chunk`` bytes.

    :meth:`members` yields ``(key, value)`` for ordinary members and ``(key, _Array)`` for ``tasks``
    and ``trajectories`` when they are arrays; an array's :meth:`_Array.batches` yields lists of its
    elements (objects), a few megabytes of text at a time, with each batch's file span. A batch ends
    at a ``}`` proposed by bracket counts and is accepted only when orjson reads ``[`` + text + ``]``:
    the same text tokenised the same way, so a wrong cut (inside a string, or one level deeper) never
    parses. Raises :class:`Declined` on anything it cannot read exactly."""

    def __init__(self, f: BinaryIO, chunk: int):
        self.f = f
        self.chunk = chunk
        self.buf = b""
        self.pos = 0
        self.base = 0  # file offset of buf[0]
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.f.read(self.chunk)
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def _peek(self) -> int:
        """The next non-blank byte (not consumed), or -1 at the end of the file."""
        while True:
            buf, n = self.buf, len(self.buf)
            p = self.pos
            while p < n and buf[p] in _WS:
                p += 1
            self.pos = p
            if p < n:
                return buf[p]
            if not self._fill():
                return -1

    def _expect(self, byte: int) -> None:
        if self._peek() != byte:
            raise Declined("unexpected text")
        self.pos += 1

    def _string(self) -> str:
        if self._peek() != 0x22:
            raise Declined("a key")
        start = self.pos
        q = start + 1
        while True:
            q = self.buf.find(b'"', q)
            while q == -1:
                if not self._fill():
                    raise Declined("unterminated string")
                start, q = self.pos, self.buf.find(b'"', self.pos + 1)
            k = q
            while self.buf[k - 1] == 0x5C:  # backslashes before the quote: odd escapes it
                k -= 1
            if (q - k) % 2 == 0:
                break
            q += 1
        text = _loads(self.buf[start : q + 1])
        self.pos = q + 1
        return text

    def _value(self) -> Any:
        """One value ending before a ``,`` or ``}`` of the top-level object (a small member)."""
        self._peek()
        start_abs = self.base + self.pos
        scan_abs = start_abs
        while True:
            buf = self.buf
            start, scan = start_abs - self.base, scan_abs - self.base
            for m in re.finditer(rb"[,}]", buf[scan:]):
                end = scan + m.start()
                seg = buf[start:end]
                if seg.count(b"{") + seg.count(b"[") != seg.count(b"}") + seg.count(b"]"):
                    continue
                try:
                    value = _loads(seg)
                except Declined:
                    continue  # a cut inside a string or a nested value: try the next one
                self.pos = end
                return value
            scan_abs = self.base + len(buf)
            if not self._fill():
                raise Declined("unterminated value")

    def members(self) -> Iterator[tuple[str, Any]]:
        if self._peek() == 0xEF and self.buf[self.pos : self.pos + 3] == b"\xef\xbb\xbf":
            self.pos += 3  # a UTF-8 byte-order mark (parse_json reads utf-8-sig)
        self._expect(0x7B)
        if self._peek() == 0x7D:
            self.pos += 1
        else:
            while True:
                key = self._string()
                self._expect(0x3A)
                if key in ("tasks", "trajectories") and self._peek() == 0x5B:
                    self.pos += 1
                    arr = _Array(self)
                    yield key, arr
                    arr.drain()
                else:
                    yield key, self._value()
                c = self._peek()
                self.pos += 1
                if c == 0x7D:
                    break
                if c != 0x2C:
                    raise Declined("unexpected text")
        if self._peek() != -1:
            raise Declined("more than one document")


class _Array:
    """The elements of one top-level array, in batches (see :class:`_Splitter`)."""

    def __init__(self, sp: _Splitter):
        self.sp = sp
        self.done = False
        # with stop (a file offset where the splitter's reader ends): batches() returns, with
        # reached set, when the array's elements read so far end exactly there (a "," and blanks)
        self.stop: int | None = None
        self.reached = False
        self.at = sp.base + sp.pos  # file offset of the next element (or of the array's end)

    def batches(self) -> Iterator[tuple[list, int, int]]:
        """``(elements, file offset, end offset)``: the text ``[offset:end]`` holds those elements."""
        sp = self.sp
        if sp._peek() == 0x5D:
            sp.pos += 1
            self.done = True
            return
        while True:
            self.at = sp.base + sp.pos
            if len(sp.buf) - sp.pos < sp.chunk and not sp.eof:
                sp._fill()
            if sp._peek() == -1:
                if self.stop is not None and sp.base + sp.pos == self.stop:
                    self.reached = True  # the elements before stop are whole: stop begins one
                    return
                raise Declined("unterminated array")
            batch = self._cut()
            while batch is None:
                if not sp._fill():
                    raise Declined("unterminated array")
                batch = self._cut()
            items, start, end = batch
            off = sp.base + start
            yield items, off, sp.base + end
            c = sp._peek()
            sp.pos += 1
            if c == 0x5D:
                self.done = True
                return
            if c != 0x2C:
                raise Declined("unexpected text in an array")

    def _cut(self) -> tuple[list, int, int] | None:
        """Complete elements from the buffer's current position, or ``None`` when it holds none."""
        sp = self.sp
        buf, start = sp.buf, sp.pos
        if buf[start : start + 1] != b"{":
            raise Declined("an array element that is not an object")
        c = buf.rfind(b"}", start)
        if c == -1:
            return None
        seg = buf[start : c + 1]
        opened = seg.count(b"{") + seg.count(b"[")
        closed = seg.count(b"}") + seg.count(b"]")
        tries = 0
        while c >= start:
            if opened == closed:
                tries += 1
                data = b"[" + buf[start : c + 1] + b"]"
                err = None
                try:
                    items = _loads(data)
                except Declined as d:
                    items, err = None, d.__cause__
                if items is not None:
                    sp.pos = c + 1
                    return items, start, c + 1
                ended = self._array_end(data, start, err)
                if ended is not None:
                    return ended
                if tries >= 4:
                    return self._exact(buf, start)
            prev = buf.rfind(b"}", start, c)
            if prev == -1:
                break
            gap = buf[prev + 1 : c + 1]
            opened -= gap.count(b"{") + gap.count(b"[")
            closed -= gap.count(b"}") + gap.count(b"]")
            c = prev
        return self._exact(buf, start)

    def _array_end(self, data: bytes, start: int, err: BaseException | None) -> tuple[list, int, int] | None:
        """When ``data`` (``[`` + text from ``start`` + ``]``) failed (``err``) because the array
        closed inside it (the cut counted past the array's ``]``), the elements before that ``]``."""
        if not isinstance(err, orjson.JSONDecodeError) or not err.msg.startswith("unexpected content after"):
            return None
        pos = err.pos  # a character index
        try:
            head = data.decode("utf-8")[:pos].encode("utf-8").rstrip()
        except UnicodeDecodeError:
            return None
        if not head.endswith(b"]"):
            return None
        try:
            items = _loads(head)
        except Declined:
            return None
        close = start + len(head) - 2  # the array's own "]" in the buffer
        self.sp.pos = close
        return items, start, close

    def _exact(self, buf: bytes, start: int) -> tuple[list, int, int] | None:
        """The slow exact cut: strings skipped by a regular expression, brackets counted."""
        depth = 0
        last = -1
        for m in re.finditer(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]', buf[start:]):
            tok = m.group()
            if tok in (b"{", b"["):
                depth += 1
            elif tok in (b"}", b"]"):
                depth -= 1
                if depth == 0:
                    last = start + m.end()
                elif depth < 0:
                    break
        if last == -1:
            return None
        items = _loads(b"[" + buf[start:last] + b"]")
        self.sp.pos = last
        return items, start, last

    def drain(self) -> None:
        if not self.done:
            for _ in self.batches():
                pass


# --------------------------------------------------------------------------------------------
# The spool of written pieces
# --------------------------------------------------------------------------------------------


_SEP = b",\n    "
"""What precedes every item of a report list after the first (items at indent level 2): list pieces
are spooled with it in front, so a run of them is written as one block (``_suite_hot.Spool.blocks``)."""


# --------------------------------------------------------------------------------------------
# The whole suite
# --------------------------------------------------------------------------------------------


class _Run:
    """The suite's state while it is read: tasks, per-trajectory numbers, spooled pieces, warnings."""

    def __init__(self, spool: _Spool, rows: _Spool):
        self.spool: Any = spool  # native reports (after a second process: a _Pair of two spools)
        self.tasks_spool = spool  # in compact mode, the tasks' text (before the native reports)
        self.rows: Any = rows  # Port Daddy rows: apart, so that both lists are runs of consecutive pieces
        self.top: dict[str, Any] = {}
        self.ids: list[str] = []  # task ids in file order
        self.store: list[Any] = []  # each task: its _Task, or (compact) the spool number of its JSON
        self.first: dict[str, int] = {}  # task id -> index of the first task with it
        self.compact = False
        self._cache: dict[int, _Task] = {}
        self.dup_ids: set[str] = set()
        self.task_warnings: list[str] = []
        self.unknown_tasks: list[tuple[int, str]] = []  # (trajectory index, taskId) naming no task
        self.extra_files: list[BinaryIO] = []  # the second process's files (closed by score_suite_to)
        # per task (by index, sized when the tasks are read): trajectories naming it, and for a first
        # task the spooled row of its last trajectory, its reward and flags (pass 1, selfReportOnly 2)
        self.attempts = array("l")
        self.row_ref = array("q")
        self.row_reward = array("d")
        self.row_flags = bytearray()
        self.dup_last: dict[str, dict] = {}  # repeated task id -> its last trajectory (plain)
        # per native report: task index, session id, reward, flags (passed 1, selfReportOnly 2,
        # loops 4), criteria, spool number
        self.n_task = array("l")
        self.n_sid: list[str] = []
        self.n_reward = array("d")
        self.n_flags = bytearray()
        self.n_crit = array("l")
        self.n_ref = array("q")
        self.n_traj = 0
        self.indexed = True  # the trajectories' indices in the file are known (not in a second process)
        self.order = True
        self.default_pass = 1.0

    def add_tasks(self, items: list) -> None:
        spool, compact = self.spool, self.compact
        for t in items:
            task = _Task(t, self.default_pass)
            k = len(self.ids)
            self.ids.append(task.id)
            stored: Any = task
            if compact:  # keep the task's text (spooled, on disk past the spool's limit), not its objects
                try:
                    # a copy of exact size: orjson's bytes keep its buffer (about 4 KiB each)
                    stored = spool.add(bytes(memoryview(orjson.dumps(t))))
                except TypeError:  # an integer beyond 64 bits: keep the object
                    pass
            self.store.append(stored)
            if task.id in self.first:
                self.dup_ids.add(task.id)
                self.task_warnings.append(
                    f"task id {task.id!r} appears more than once; trajectories are scored against the first"
                )
            else:
                self.first[task.id] = k

    def tasks_read(self) -> None:
        """Size the per-task arrays (every task is read before any trajectory is scored)."""
        n = len(self.ids)
        self.attempts = array("l", bytes(8 * n)) if array("l").itemsize == 8 else array("l", [0] * n)
        self.row_ref = array("q", [-1]) * n
        self.row_reward = array("d", bytes(8 * n))
        self.row_flags = bytearray(n)

    def task(self, k: int) -> _Task:
        """The ``k``-th task (rebuilt from its text in compact mode, up to :data:`TASK_CACHE` cached)."""
        stored = self.store[k]
        if type(stored) is not int:
            return stored
        task = self._cache.get(k)
        if task is None:
            if len(self._cache) >= TASK_CACHE:
                self._cache.clear()
            task = self._cache[k] = _Task(orjson.loads(self.tasks_spool.get(stored)), self.default_pass)
        return task

    def add_trajectories(self, items: list) -> None:
        """Check and score each trajectory of ``items``, spooling its native report and its row
        (``_suite_hot.score_batch``)."""
        _score_batch(self, items)

    def _native(self, k: int, done: _Scored, sid: str) -> None:
        _add_native(self, k, done, sid)

    def native_order(self) -> range | list[int]:
        """The native reports' order in the report: by task id, then session id, stable
        (``tools.evals._report.sort_scores``); no sort when they came in that order."""
        return _native_order(self.ids, self.n_task, self.n_sid)


def _consume(sp: _Splitter, run: _Run, f: BinaryIO, processes: int = 1, info: dict | None = None) -> None:
    """Read every member; tasks are scored against before trajectories (re-read when they come first)."""
    seen: set[str] = set()
    pending: list[tuple[int, int]] = []  # spans of trajectories read before the tasks
    tasks_done = False
    for key, value in sp.members():
        if key in ("tasks", "trajectories"):
            if key in seen:
                raise Declined(f"{key} given twice")
            seen.add(key)
        if not isinstance(value, _Array):
            if key in ("tasks", "trajectories"):
                raise Declined(f"{key} is not a list")  # a finding of the validator
            run.top[key] = value
            continue
        if key == "tasks":
            _top_settings(run)
            for items, _, _ in value.batches():
                run.add_tasks(items)
            if not run.ids:
                raise Declined("no tasks")
            run.tasks_read()
            tasks_done = True
            for start, end in pending:
                run.add_trajectories(_loads(b"[" + os.pread(f.fileno(), end - start, start) + b"]"))
            pending = []
        elif tasks_done:
            _trajectories(sp, value, run, f, processes, info)
        else:
            for items, start, end in value.batches():
                for tr in items:
                    _check_trajectory(tr)  # decline early, before the tasks are read
                pending.append((start, end))
    if not tasks_done:
        raise Declined("no tasks")
    if pending:  # pragma: no cover - pending is emptied when the tasks are read
        raise Declined("trajectories left unread")


# --------------------------------------------------------------------------------------------
# The trajectories in two processes
# --------------------------------------------------------------------------------------------

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
"""File bytes after the tasks from which ``processes=2`` splits the trajectories between two
processes (measured on 2 loaded CPUs: a loss at 10 MB, even at 30 MB, a gain at 96 MB; the fork's
copy-on-write faults and the second process's start cost about 0.05-0.1 s of CPU)."""
_BASE = 1 << 40
"""Spool numbers from here on are the second process's pieces (:class:`_Pair`)."""
_BOUNDARY = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_ATTEMPTS = b'\n      "attempts": '  # the key of a row (indent level 3) in its spooled text
_INF = 1 << 62


def default_processes() -> int:
    """How many processes ``score FILE --json`` lets :func:`score_suite_to` use: the value of
    ``AGENT_RL_SANDBOX_SCORE_PROCESSES`` (``1`` or ``2``) when set; else 2 where this process may
    run on two or more CPUs and one of them is free (the 1-minute load average at most the CPUs
    less one: on 2 CPUs at a load of 9-11 two processes took 7% more wall time and 10% more CPU
    than one); else 1, and 1 where ``os.fork`` does not exist. Raises ``ValueError`` naming the
    variable for any other value."""
    want = os.environ.get("AGENT_RL_SANDBOX_SCORE_PROCESSES", "").strip()
    if want:
        if want not in ("1", "2"):
            raise ValueError(
                f"AGENT_RL_SANDBOX_SCORE_PROCESSES={want!r} is not 1 or 2 (default: 2 on a free second CPU)"
            )
        return int(want) if hasattr(os, "fork") else 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = float(cpus)  # unknown: as if no CPU were free
    return 2 if cpus >= 2 and load <= cpus - 1 and hasattr(os, "fork") else 1


class _PReader:
    """``read(n)`` of a file descriptor from its own offset ``pos`` by ``os.pread`` (the
    descriptor's offset, shared with a forked process, is never used), ending at offset ``stop``."""

    def __init__(self, fd: int, pos: int, stop: int = _INF):
        self.fd, self.pos, self.stop = fd, pos, stop

    def read(self, n: int) -> bytes:
        n = min(n, self.stop - self.pos)
        if n <= 0:
            return b""
        data = os.pread(self.fd, n, self.pos)
        self.pos += len(data)
        return data


class _Pair:
    """Two spools read as one (the first process's and the second's, :meth:`_suite_hot.Spool.adopt`):
    numbers from :data:`_BASE` on are the second's (less ``_BASE``); pieces are added to the first."""

    def __init__(self, first: Any, second: Any):
        self.first, self.second = first, second

    def add(self, data: bytes) -> int:
        return self.first.add(data)

    def drop(self, ref: int) -> None:
        if ref < _BASE:
            self.first.drop(ref)

    def flush(self) -> None:
        self.first.flush()

    def get(self, ref: int) -> bytes:
        return self.first.get(ref) if ref < _BASE else self.second.get(ref - _BASE)

    def blocks(self, refs: Any) -> Iterator[bytes]:
        """``Spool.blocks`` over both: each run of numbers from one spool read from it in blocks."""
        run: list[int] = []
        second = False
        for r in refs:
            s = r >= _BASE
            if s is not second and run:
                yield from (self.second if second else self.first).blocks(run)
                run = []
            second = s
            run.append(r - _BASE if s else r)
        if run:
            yield from (self.second if second else self.first).blocks(run)


def _boundary(fd: int, at: int, size: int) -> int | None:
    """A likely place to split the ``trajectories`` array at or after offset ``at``: the offset of
    a ``{`` that follows ``}``, ``,`` and blanks and opens an object with a ``taskId`` (an element
    of a nested list opens one without). Only likely: it may still be inside a string or a nested
    value, so the first process proves it (:func:`_trajectories`). ``None`` within 8 MiB."""
    for _ in range(8):
        data = os.pread(fd, CHUNK_BYTES, at)
        for m in _BOUNDARY.finditer(data):
            if _opens_trajectory(data, m.end() - 1):
                return at + m.end() - 1
        if len(data) < CHUNK_BYTES or at + len(data) >= size:
            return None
        at += len(data) - 256  # a match across the two reads, unless its blanks are longer
    return None


def _opens_trajectory(data: bytes, start: int) -> bool:
    """True when the object text from ``data[start]`` (a ``{``) parses, within 256 KiB, as an object
    with a ``taskId`` member (the first ``}`` that balances the brackets and parses ends it)."""
    end = min(len(data), start + (1 << 18))
    opened = closed = 0
    j = start
    while True:
        k = data.find(b"}", j, end)
        if k == -1:
            return False
        opened += data.count(b"{", j, k + 1) + data.count(b"[", j, k + 1)
        closed += data.count(b"}", j, k + 1) + data.count(b"]", j, k + 1)
        j = k + 1
        if opened == closed:
            try:
                obj = orjson.loads(data[start : k + 1])
            except orjson.JSONDecodeError:
                continue  # a bracket inside a string: a later one may end the object
            return type(obj) is dict and "taskId" in obj


def _trajectories(sp: _Splitter, arr: _Array, run: _Run, f: BinaryIO, processes: int, info: dict | None) -> None:
    """Score the ``trajectories`` array ``arr`` (its ``[`` read; the tasks are read).

    With ``processes`` >= 2, no repeated task id and at least :data:`PARALLEL_MIN_BYTES` of the
    file left, the array is split near the middle of what is left: a forked process scores the
    elements from the split (:func:`_second`) while this one scores those before it, and this one
    then takes the other's pieces and numbers as if it had scored them itself (:func:`_merge`): the
    same state, so the same report bytes. The split is a guess (:func:`_boundary`) that counts only
    when this process, reading from the array's start, finds its elements end exactly there; else,
    and when the other process fails or meets a trajectory whose session id is its index (which it
    cannot know), this process scores the rest itself. A decline of either part declines the suite.
    ``info["split"]`` (when given) says which way it went."""
    fd = f.fileno()
    here = sp.base + sp.pos
    size = os.fstat(fd).st_size
    stop = None
    if processes >= 2 and not run.dup_ids and size - here >= PARALLEL_MIN_BYTES:
        stop = _boundary(fd, here + (size - here) // 2, size)
    if stop is None:
        if info is not None:
            info["split"] = "one process"
        for items, _, _ in arr.batches():
            run.add_trajectories(items)
        return
    import signal
    import tempfile

    files: list[BinaryIO] = [tempfile.TemporaryFile(prefix="agent-rl-sandbox-part-") for _ in range(3)]  # noqa: SIM115
    run.extra_files += files  # closed by score_suite_to
    run.spool.flush()  # nothing left pending that the other process could write to this one's file
    run.rows.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the second process (measured by what it hands back)
        code = 70
        try:
            code = _second(run, fd, stop, sp.chunk, files)
        except NeedIndex:
            code = 3
        except Declined as e:
            files[2].write(str(e).encode("utf-8", "replace"))
            files[2].flush()
            code = 4
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    outcome = "one process after a split that did not hold"
    try:
        reader = _PReader(fd, sp.base + len(sp.buf), stop)
        if reader.pos > stop:  # the buffer already holds text past the split: cut it there
            sp.buf = sp.buf[: stop - sp.base]
            reader.pos = stop
        sp.f, sp.eof = reader, False  # type: ignore[assignment]
        arr.stop = stop
        batches = arr.batches()
        while True:
            try:
                got = next(batches, None)
            except Declined:  # perhaps only the split: read again from the element it was at
                sp.buf, sp.base, sp.pos, reader.pos = b"", arr.at, 0, arr.at
                break
            if got is None:
                break
            run.add_trajectories(got[0])  # a decline here is the suite's
        arr.stop, reader.stop, sp.eof = None, _INF, False
        if arr.reached:
            arr.reached = False
            _, status = os.waitpid(pid, 0)
            pid = 0
            code = os.waitstatus_to_exitcode(status)
            if code == 0:
                end = _merge(run, files)
                sp.buf, sp.base, sp.pos, reader.pos = b"", end, 0, end
                arr.done = True
                outcome = "two processes"
            elif code == 4:
                reason = os.pread(files[2].fileno(), 4096, 0).decode("utf-8", "replace")
                raise Declined(reason or "declined in the second process")
            else:
                outcome = "one process after the second failed" if code != 3 else "one process (index-named sessions)"
        reader.pos = sp.base + len(sp.buf)  # the splitter reads on from the end of its buffer
        if not arr.done:
            for items, _, _ in arr.batches():
                run.add_trajectories(items)
        if info is not None:
            info["split"] = outcome
    finally:
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - it ended on its own
                pass
            os.waitpid(pid, 0)


def _second(run: _Run, fd: int, stop: int, chunk: int, files: list[BinaryIO]) -> int:
    """In the forked process: score the array's elements from offset ``stop`` to its end into
    fresh spools written to ``files[0]`` (native reports) and ``files[1]`` (rows), and write what
    :func:`_merge` needs to ``files[2]``; 0 when done."""
    import marshal

    run.spool = _Spool(SPOOL_MEMORY_BYTES)
    run.spool.attach(files[0])
    run.rows = _Spool(SPOOL_MEMORY_BYTES)
    run.rows.attach(files[1])
    run.tasks_read()  # this part's counts, rows and rewards per task, from zero
    run.n_task, run.n_sid, run.n_reward = array("l"), [], array("d")
    run.n_flags, run.n_crit, run.n_ref = bytearray(), array("l"), array("q")
    run.n_traj, run.unknown_tasks, run.indexed = 0, [], False
    sp = _Splitter(_PReader(fd, stop), chunk)  # type: ignore[arg-type]
    sp.base = stop
    arr = _Array(sp)
    for items, _, _ in arr.batches():
        run.add_trajectories(items)
    run.spool.flush()
    run.rows.flush()
    meta = (
        sp.base + sp.pos,
        run.n_traj,
        run.unknown_tasks,
        run.n_sid,
        bytes(run.n_flags),
        bytes(run.row_flags),
        *(a.tobytes() for a in (run.n_task, run.n_reward, run.n_crit, run.n_ref)),
        *(a.tobytes() for a in (run.attempts, run.row_ref, run.row_reward)),
        *(a.tobytes() for a in (run.spool.offsets, run.spool.lengths, run.rows.offsets, run.rows.lengths)),
    )
    files[2].write(marshal.dumps(meta))
    files[2].flush()
    return 0


def _merge(run: _Run, files: list[BinaryIO]) -> int:
    """Take the second process's part (:func:`_second`) into ``run`` as if this process had scored
    it after its own: indices shifted, counts added, each task's row the part's last (with the
    attempts of both parts); returns the file offset just after the array."""
    import marshal

    meta = files[2]
    data = os.pread(meta.fileno(), os.fstat(meta.fileno()).st_size, 0)
    end, count, unknown, sids, n_flags, row_flags, n_task, n_reward, n_crit, n_ref, *rest = marshal.loads(data)
    attempts, row_ref, row_reward, nat_off, nat_len, row_off, row_len = rest
    before = run.n_traj
    run.n_traj = before + count
    run.unknown_tasks += [(i + before, tid) for i, tid in unknown]
    run.n_sid += sids
    run.n_flags += n_flags
    run.n_task.frombytes(n_task)
    run.n_reward.frombytes(n_reward)
    run.n_crit.frombytes(n_crit)
    run.n_ref.extend([r + _BASE for r in array("q", n_ref)])
    natives, rows = _Spool(SPOOL_MEMORY_BYTES), _Spool(SPOOL_MEMORY_BYTES)  # limit: the read block size
    natives.adopt(files[0], nat_off, nat_len)
    rows.adopt(files[1], row_off, row_len)
    mine = run.rows
    c_att, c_ref, c_reward = array("l", attempts), array("q", row_ref), array("d", row_reward)
    att, ref, rew, flags = run.attempts, run.row_ref, run.row_reward, run.row_flags
    for k, c in enumerate(c_att):
        if not c:
            continue
        p = att[k]
        att[k] = p + c
        if c_ref[k] < 0:  # pragma: no cover - a task with trajectories has a row
            continue
        if p:  # trajectories of this task in both parts: the row says how many in all
            if ref[k] >= 0:
                mine.drop(ref[k])
            ref[k] = mine.add(_with_attempts(rows.get(c_ref[k]), p + c))
        else:
            ref[k] = c_ref[k] + _BASE
        rew[k] = c_reward[k]
        flags[k] = row_flags[k]
    run.spool = _Pair(run.spool, natives)
    run.rows = _Pair(mine, rows)
    return end


def _with_attempts(row: bytes, n: int) -> bytes:
    """A spooled row's text with its ``attempts`` set to ``n`` (the key's line is the only one at its
    indent starting so: strings hold no raw newline, nested keys are indented deeper)."""
    i = row.index(_ATTEMPTS) + len(_ATTEMPTS)
    j = row.index(b",", i)
    return row[:i] + str(n).encode() + row[j:]


def _top_settings(run: _Run) -> None:
    # the reward spec may follow the tasks in the file; thresholds are fixed when tasks are read,
    # so a spec given after the tasks is declined unless it keeps the default pass reward
    order, default_pass, _, _, _ = _check_top(run.top)
    run.order, run.default_pass = order, default_pass


_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[{}\[\]]|"')
_CLOSES = {0x7D: 0x7B, 0x5D: 0x5B}


def defect(path: str) -> str | None:
    """Why the file at ``path`` cannot be a JSON document at all, or ``None`` when no such defect is
    found: ``not UTF-8 text (byte N)``, or a bracket or string the text never closes or closes with
    the wrong bracket (``not valid JSON: ... at byte N (line L)``). It streams the file (no size
    cap; about a second for 200 MB) and is meant for explaining a decline of :func:`score_suite_to`
    on a file too big for the model path, which would only report its size. ``OSError`` when the
    file cannot be read."""
    import codecs
    import mmap

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        dec = codecs.getincrementaldecoder("utf-8")()
        done = 0
        while True:
            data = f.read(CHUNK_BYTES)
            held = len(dec.getstate()[0])  # bytes of a character cut by the previous chunk
            try:
                dec.decode(data, final=not data)
            except UnicodeDecodeError as e:
                return f"not UTF-8 text (byte {done - held + e.start})"
            if not data:
                break
            done += len(data)
        if size == 0:
            return "not valid JSON: the file is empty"
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            stack: list[tuple[int, int]] = []
            where: int | None = None
            why = ""
            for m in _TOKEN.finditer(mm):
                tok = m.group()
                c = tok[0]
                if c == 0x22:
                    if len(tok) == 1:
                        where, why = m.start(), "a string that is never closed"
                        break
                elif c in (0x7B, 0x5B):
                    stack.append((c, m.start()))
                elif not stack or stack[-1][0] != _CLOSES[c]:
                    where, why = m.start(), f"an unexpected {chr(c)!r}"
                    break
                else:
                    stack.pop()
            if where is None and stack:
                opener, start = stack[-1]
                where, why = (
                    size,
                    f"the file ends inside the {'object' if opener == 0x7B else 'array'} opened at byte {start}",
                )
            if where is None:
                return None
            line = mm[:where].count(b"\n") + 1
    return f"not valid JSON: {why}, at byte {where} (line {line})"


def score_suite_to(
    path: str,
    source: str,
    write: Callable[[bytes], Any],
    *,
    chunk: int = CHUNK_BYTES,
    summary: Callable[[dict, list, list, int], Any] | None = None,
    processes: int = 1,
    info: dict | None = None,
) -> None:
    """Score the Port Daddy suite file ``path`` and pass the report's bytes to ``write`` in pieces.

    ``source`` is the report's ``source`` (the file's name). The bytes are those of
    ``report_json_bytes(score_suite_document(...))`` for the same file. Raises :class:`Declined`
    before the first ``write`` when the file is not a suite this scorer takes (see the module
    docstring); ``OSError`` when it cannot be read.

    With ``summary``, nothing is written: ``summary(small, by_task, trajectories, count)`` gets the
    report's small members (``stats``, ``summary``, ``warnings``, ...: a dict as in the report),
    the first :data:`SUMMARY_ROWS` ``by_task`` groups and trajectory reports (dicts, in the
    report's order) and the number of trajectory reports (for a table of a suite of any size).

    With ``processes=2`` (``score FILE --json`` passes :func:`default_processes`) the trajectories
    of a large suite are scored by two processes, this one and a fork (:func:`_trajectories`), with
    the same bytes; ``info`` (a dict, when given) gets ``"split"``: which way they were scored."""
    spool = _Spool(SPOOL_MEMORY_BYTES * 3 // 4)  # native reports are about 3x the rows' bytes
    rows = _Spool(SPOOL_MEMORY_BYTES // 4)
    extra: list[BinaryIO] = []
    try:
        with open(path, "rb") as f:
            if not os.path.isfile(path):
                raise Declined("not a regular file")
            run = _Run(spool, rows)
            run.extra_files = extra
            run.compact = os.fstat(f.fileno()).st_size > COMPACT_TASKS_BYTES
            sp = _Splitter(f, chunk)
            _consume(sp, run, f, processes, info)
            order, default_pass, need_unhooks, agent, unhooks = _check_top(run.top)
            if (order, default_pass) != (run.order, run.default_pass):
                raise Declined("rewardSpec after the tasks")
            _finish(run, need_unhooks, agent, unhooks, source, write, summary)
    finally:
        spool.close()
        rows.close()
        for x in extra:
            x.close()


SUMMARY_ROWS = 50
"""``by_task`` groups and trajectory reports handed to ``score_suite_to``'s ``summary``."""


def _finish(
    run: _Run, need_unhooks: bool, agent: Any, unhooks: list, source: str, write: Callable, on_summary: Callable | None
) -> None:
    spool, order, ids = run.spool, run.order, run.ids
    per_task_warnings = _finish_rows(run)
    spool.flush()
    run.rows.flush()
    valid = _validated_unhooks(unhooks)
    unhooks_ready = len(valid) > 0 if need_unhooks else True
    flags = run.row_flags
    passed_rows = _flag_counts(flags)[0]
    failed_rows = len(flags) - passed_rows
    gate_passed = failed_rows == 0
    # reduce((sum, x) => sum + x, 0): left to right, uncompensated
    total = _ordered_sum(run.row_reward, range(len(ids)))
    warnings = []
    if not gate_passed:
        warnings.append("eval gate failed; do not deploy an adapted agent from this report")
    if not unhooks_ready:
        warnings.append("no validated unhooks supplied; do not deploy an adapted agent from this report")
    warnings += run.task_warnings
    warnings += [
        f"trajectories[{i}] has taskId {tid!r}, which no task declares; not scored" for i, tid in run.unknown_tasks
    ]
    warnings += per_task_warnings
    seq = run.native_order()
    n = len(seq)
    n_task, n_reward, n_flags = run.n_task, run.n_reward, run.n_flags

    def sorted_natives() -> Iterator[tuple[str, float, int]]:
        return _natives_in(ids, n_task, n_reward, n_flags, seq)

    # by task, in sorted order (tools.evals._report.group_stats): counted here, written lazily
    n_multi, n_zero = _group_counts(sorted_natives())
    passed_n, sro_n, loops_n = _flag_counts(n_flags)
    stats = {
        "criteria_total": sum(run.n_crit),
        "failed": n - passed_n,
        "groups": n_multi,
        "loops": loops_n,
        "malformed_tool_calls": 0,
        "mean_reward": _r(_ordered_sum(n_reward, seq) / n) if n else 0.0,
        "pass_rate": _r(passed_n / n) if n else 0.0,
        "passed": passed_n,
        "problems": 0,
        "safety_violations": 0,
        "self_report_only": sro_n,
        "trajectories": n,
        "unscorable_criteria": 0,
        "unscorable_share": 0.0,
        "validated_unhooks": len(valid),
        "zero_variance_groups": n_zero,
        "zero_variance_share": _r(n_zero / n_multi) if n_multi else 0.0,
    }
    if n == 0:
        warnings.append("no trajectories were scored")
    if n_zero:
        warnings.append(
            f"{n_zero} of {n_multi} task group(s) have zero reward variance: group-relative RL learns nothing from them"
        )
    summary = {
        "averageReward": round3(total / len(ids)),
        "deployable": gate_passed and unhooks_ready,
        "evalGatePassed": gate_passed,
        "failed": failed_rows,
        "passed": passed_rows,
        "taskCount": len(ids),
        "unhooksReady": unhooks_ready,
        "validatedUnhookCount": len(valid),
    }

    small: dict[str, Any] = {
        "agent": agent if agent else {},
        "kind": "port_daddy_suite",
        "problems": [],
        "report_version": 1,
        "rewardSpec": {
            "actionOrderRequired": order,
            "defaultPassReward": run.default_pass,
            "requireValidatedUnhooksForDeployment": need_unhooks,
        },
        "source": source,
        "stats": stats,
        "suggestedUnhooks": list(SUGGESTED_UNHOOKS),
        "summary": summary,
        "validatedUnhooks": valid,
        "warnings": warnings,
    }
    big: dict[str, Callable[[], Iterator[bytes]]] = {
        "by_task": lambda: _by_task_blocks(sorted_natives()),
        "rows": lambda: run.rows.blocks(run.row_ref),
        "trainingRows": lambda: _training_blocks(ids, run.row_reward, flags),
        "trajectories": lambda: spool.blocks(run.n_ref if type(seq) is range else (run.n_ref[i] for i in seq)),
    }
    if on_summary is not None:
        groups = [g for _, g in zip(range(SUMMARY_ROWS), _groups(sorted_natives()), strict=False)]
        heads = [orjson.loads(spool.get(run.n_ref[i])[len(_SEP) :]) for i in list(seq[:SUMMARY_ROWS])]
        on_summary(small, groups, heads, n)
        return
    write(b"{")
    for idx, key in enumerate(sorted([*small, *big])):
        out = [b",\n  " if idx else b"\n  ", dumps_indented(key), b": "]
        if key in small:
            out.append(dumps_indented(small[key], 1))
            write(b"".join(out))
            continue
        write(b"".join(out))
        _write_list(big[key](), write)
    write(b"\n}\n")


def _write_list(pieces: Iterator[bytes], write: Callable[[bytes], Any]) -> None:
    """A list at indent level 1 from ``pieces``: its items (at level 2) each preceded by
    :data:`_SEP`, concatenated and cut anywhere between items (the first piece is not empty)."""
    buf: list[bytes] = []
    size = 0
    first = True
    for p in pieces:
        if first:
            p = b"[" + p[1:]  # the first item's ",\n    " is "[\n    "
            first = False
        buf.append(p)
        size += len(p)
        if size >= 1 << 16:
            write(b"".join(buf))
            buf, size = [], 0
    buf.append(b"[]" if first else b"\n  ]")
    write(b"".join(buf))

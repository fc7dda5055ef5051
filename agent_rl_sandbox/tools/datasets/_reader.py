"""Streaming, crash-proof reading of JSONL files (and bounded reading of whole-JSON documents).

Any byte sequence is accepted: every problem becomes a ``ReadProblem`` with a line number instead of an
exception. Memory is bounded by ``max_line_bytes`` per line (a longer line is skipped in chunks up to its
newline, never held whole) and by ``max_document_bytes`` for a ``.json`` document.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest JSONL line read (16 MiB); longer lines are reported as ``line_too_long`` and skipped."""
DEFAULT_MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest whole-JSON document (ATIF, trajectory suite, a JSON array of rows) parsed in memory (64 MiB)."""
_SKIP_CHUNK = 1024 * 1024
_BUFFER = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class NonFiniteNumber(ValueError):
    """Raised inside the JSON decoder for NaN, Infinity, -Infinity or a float literal that overflows."""


def _reject_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NonFiniteNumber(text)
    return value


DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_parse_float)
"""Strict decoder: rejects NaN/Infinity (not JSON; Arrow and most loaders choke on them) and float overflow."""


@dataclass(slots=True)
class ReadProblem:
    """A line that could not be turned into a JSON value: ``code`` is the finding code, ``message`` why."""

    line: int
    code: str
    message: str


def parse_json_text(text: str, *, last_line: bool = False) -> tuple[Any, ReadProblem | None]:
    """Parse one JSON value; never raises.

    Returns ``(value, None)`` or ``(None, problem)`` where the problem's ``line`` is 0 (the caller sets
    it). Codes: ``invalid_json`` (with column; "may be truncated" when ``last_line``), ``nan_not_allowed``,
    ``too_deep`` (the decoder's recursion limit, about 1,000 levels).
    """
    try:
        return DECODER.decode(text), None
    except NonFiniteNumber as exc:
        return None, ReadProblem(0, "nan_not_allowed", f"{exc} is not valid JSON (NaN/Infinity/overflow)")
    except json.JSONDecodeError as exc:
        hint = " (the last line has no newline: the file may be truncated)" if last_line else ""
        return None, ReadProblem(0, "invalid_json", f"{exc.msg} at column {exc.colno}{hint}")
    except RecursionError:
        return None, ReadProblem(0, "too_deep", "nesting too deep to parse")
    except (ValueError, MemoryError, OverflowError) as exc:  # e.g. an integer with > 4,300 digits
        return None, ReadProblem(0, "invalid_json", f"{type(exc).__name__}: {str(exc)[:200]}")


def iter_jsonl(
    fh: BinaryIO,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_bytes: Callable[[int], None] | None = None,
    flags: dict[str, bool] | None = None,
    lane: Callable[[int, bytes], bool] | None = None,
) -> Iterator[tuple[int, bytes | None, str | None, ReadProblem | None]]:
    """Yield ``(line_number, raw_line, text, problem)`` for every non-blank line of a binary stream.

    - ``raw_line``: the bytes without BOM and line ending (for hashing), ``None`` with a problem.
    - ``text``: the line decoded as UTF-8, ``None`` with a problem.
    - Blank lines yield ``(n, b"", None, None)`` so the caller can count them.
    - Problems: ``line_too_long`` (over ``max_line_bytes``; skipped in 1 MiB chunks, never held whole),
      ``invalid_utf8`` (with the byte offset), ``not_utf8`` (a UTF-16 BOM; reading stops there),
      A UTF-8 BOM on line 1 is not a problem: it is stripped and ``flags["bom"]`` is set.
    ``on_bytes(n)`` is called with the bytes consumed by each line (for progress). Never raises on content;
    I/O errors (``OSError``) propagate.

    ``lane(line_number, raw_line)``, when given, is offered every plain line first (after line 1, ending in
    a lone ``\n``, starting with ``{``: a line for which this reader would yield ``raw_line`` exactly as
    passed, no BOM, no blank, no line-length problem) and returns True when it handled the line itself
    (then nothing is yielded for it), False to have it yielded as usual. It must check the line is UTF-8
    itself before handling it (an ``invalid_utf8`` line is the reader's to report).
    """
    lineno = 0
    limit = max_line_bytes + 1
    readline = fh.readline
    while True:
        raw = readline(limit)
        if not raw:
            return
        lineno += 1
        consumed = len(raw)
        if lane is not None and lineno > 1 and raw.startswith(b"{") and raw.endswith(b"\n"):
            line = raw[:-1]
            if not line.endswith(b"\r"):  # else rstrip below takes the \r too
                if on_bytes:
                    on_bytes(consumed)
                if lane(lineno, line):
                    continue
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield lineno, None, None, _invalid_utf8(lineno, exc)
                    continue
                yield lineno, line, text, None
                continue
        if len(raw) == limit and not raw.endswith(b"\n"):
            # Over the limit: discard the rest of the line chunk by chunk.
            while True:
                chunk = readline(_SKIP_CHUNK)
                consumed += len(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    break
            if on_bytes:
                on_bytes(consumed)
            yield (
                lineno,
                None,
                None,
                ReadProblem(
                    lineno, "line_too_long", f"line is {consumed:,} bytes, over the {max_line_bytes:,}-byte limit"
                ),
            )
            continue
        if on_bytes:
            on_bytes(consumed)
        if lineno == 1:
            if raw.startswith(_UTF16_BOMS):
                yield (
                    lineno,
                    None,
                    None,
                    ReadProblem(lineno, "not_utf8", "file starts with a UTF-16 byte-order mark; convert it to UTF-8"),
                )
                return
            if raw.startswith(_BOM):
                raw = raw[3:]
                if flags is not None:
                    flags["bom"] = True
        has_newline = raw.endswith(b"\n")
        line = raw.rstrip(b"\r\n") if has_newline else raw
        if not line.strip():
            yield lineno, b"", None, None
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield lineno, None, None, _invalid_utf8(lineno, exc)
            continue
        yield lineno, line, text, (None if has_newline else _NO_NEWLINE)


def _invalid_utf8(lineno: int, exc: UnicodeDecodeError) -> ReadProblem:
    return ReadProblem(lineno, "invalid_utf8", f"invalid UTF-8 at byte offset {exc.start} of the line ({exc.reason})")


_NO_NEWLINE = ReadProblem(0, "", "")
"""Sentinel (not a real problem): the line had no trailing newline (the last line of the file)."""


def is_no_newline(problem: ReadProblem | None) -> bool:
    """True for the sentinel ``iter_jsonl`` yields with a last line lacking its newline."""
    return problem is _NO_NEWLINE


def iter_document(
    text: str,
) -> Iterator[tuple[int, Any, ReadProblem | None]]:
    """Yield ``(line, value, problem)`` for a whole-JSON document.

    A top-level array yields one row per element with the line where the element starts; anything else
    yields one row at the line where it starts. A parse error yields one ``invalid_json`` problem with the
    document line and column. Never raises.
    """
    idx = _skip_ws(text, 0)
    if idx < len(text) and text[idx] == "[":
        line = 1 + text.count("\n", 0, idx)
        pos = _skip_ws(text, idx + 1)
        if pos < len(text) and text[pos] == "]":
            end = _skip_ws(text, pos + 1)
            if end != len(text):
                yield line, None, ReadProblem(line, "invalid_json", "extra data after the top-level array")
            return
        last_pos = idx
        while True:
            line += text.count("\n", last_pos, pos)
            last_pos = pos
            decoded = _decode(partial(DECODER.raw_decode, text, pos), line)
            if isinstance(decoded, ReadProblem):
                yield decoded.line, None, decoded
                return
            value, end = decoded
            yield line, value, None
            pos = _skip_ws(text, end)
            if pos < len(text) and text[pos] == ",":
                pos = _skip_ws(text, pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                if _skip_ws(text, pos + 1) != len(text):
                    bad = 1 + text.count("\n", 0, pos)
                    yield bad, None, ReadProblem(bad, "invalid_json", "extra data after the top-level array")
                return
            bad = 1 + text.count("\n", 0, min(pos, len(text)))
            yield bad, None, ReadProblem(bad, "invalid_json", "expected ',' or ']' in the top-level array")
            return
    line = 1 + text.count("\n", 0, idx)
    decoded = _decode(partial(DECODER.decode, text), line)
    if isinstance(decoded, ReadProblem):
        yield decoded.line, None, decoded
        return
    yield line, decoded, None


def _decode(parse: Callable[[], Any], line: int) -> Any:
    """``parse()``'s result, or the :class:`ReadProblem` it raised (at ``line``, or at the decoder's
    own line for a syntax error). Never raises."""
    try:
        return parse()
    except NonFiniteNumber as exc:
        return ReadProblem(line, "nan_not_allowed", f"{exc} is not valid JSON")
    except json.JSONDecodeError as exc:
        return ReadProblem(exc.lineno, "invalid_json", f"{exc.msg} at line {exc.lineno} column {exc.colno}")
    except RecursionError:
        return ReadProblem(line, "too_deep", "nesting too deep to parse")
    except (ValueError, MemoryError, OverflowError) as exc:
        return ReadProblem(line, "invalid_json", f"{type(exc).__name__}: {str(exc)[:200]}")


_WS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    return pos


def sniff_document(head_lines: list[bytes]) -> bool:
    """Decide from the first lines whether a file is one (pretty-printed) JSON document rather than JSONL.

    True when the first non-blank line is a lone ``{`` or ``[``; or it opens an array it does not close; or
    it does not parse and the next line is an indented ``"key":`` line. A JSONL file whose first lines are
    broken keeps JSONL mode, so each bad line is reported. Never raises.
    """
    lines = [ln for ln in head_lines if ln.strip()]
    if not lines:
        return False
    first = lines[0].strip()
    if first.startswith(_BOM):
        first = first[3:].strip()
    if first in (b"{", b"["):
        return True
    if first[:1] not in (b"{", b"[") or _parses(first):
        return False
    if first.startswith(b"["):
        return True
    return len(lines) >= 2 and _INDENTED_KEY.match(lines[1]) is not None


_INDENTED_KEY = re.compile(rb'[ \t]+"(?:[^"\\]|\\.)*"\s*:')


def _parses(raw: bytes) -> bool:
    try:
        value = DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError, MemoryError, OverflowError):
        return False
    return isinstance(value, (dict, list))

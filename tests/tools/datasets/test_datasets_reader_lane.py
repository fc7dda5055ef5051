"""The reader's ``lane`` (``_reader.iter_jsonl``): the lines it offers are exactly the lines the reader would
yield with no problem, with the same bytes, numbers and byte counts, whatever the file holds.

The validator hands those lines to the fast path as bytes (``_Engine.plain_line``), so a line offered
that the reader would have reported (a BOM, a CRLF ending, invalid UTF-8, an over-long or last line) or
offered with other bytes would change a report.
"""

from __future__ import annotations

import io
import random

import pytest

from agent_rl_sandbox.tools.datasets._reader import iter_jsonl

_PIECES = [
    b'{"a": 1}',
    b'{"messages": []}',
    b'{"x": "caf\xe9"}',  # invalid UTF-8
    b'{"x": "\xc3\xa9t\xc3\xa9"}',  # UTF-8
    b"{" + b"y" * 90,  # over the limit below
    b"   ",
    b"",
    b"[1]",
    b"\xef\xbb\xbf{}",
    b"\xff\xfe{}",
    b" {}",
    b"{}\r",
    b"{}\r\r",
    b"{\r}",
]


def _file(rnd: random.Random) -> bytes:
    lines = [rnd.choice(_PIECES) + rnd.choice([b"\n", b"\r\n", b"\n"]) for _ in range(rnd.randint(1, 40))]
    if rnd.random() < 0.5:
        lines[-1] = lines[-1].rstrip(b"\r\n")  # no final newline
    return b"".join(lines)


def _read(data: bytes, lane=None) -> tuple[list, list[int], dict]:
    counted: list[int] = []
    flags: dict[str, bool] = {}
    rows = list(iter_jsonl(io.BytesIO(data), max_line_bytes=64, on_bytes=counted.append, flags=flags, lane=lane))
    return rows, counted, flags


@pytest.mark.parametrize("seed", range(3))
def test_the_lane_sees_only_plain_lines_with_the_readers_bytes(seed):
    rnd = random.Random(seed)
    total = 0
    for _ in range(300):
        data = _file(rnd)
        plain, counted, flags = _read(data)
        # a lane that declines everything changes nothing
        offered: list[tuple[int, bytes]] = []
        rows, counted2, flags2 = _read(data, lambda n, b, seen=offered: seen.append((n, b)) or False)
        assert (rows, counted2, flags2) == (plain, counted, flags)
        # every offered line is one the reader yields as a plain row, with the same bytes
        yielded = {n: (raw, text, problem) for n, raw, text, problem in plain}
        for n, b in offered:
            raw, text, problem = yielded[n]
            if problem is None:
                assert raw == b and text == b.decode("utf-8"), (n, b)
            else:  # the lane must decline it: the reader reports it
                assert problem.code == "invalid_utf8", (n, b, problem)
        total += len(offered)
        # a lane that takes every UTF-8 line it is offered: those lines are not yielded, the rest are as before
        taken: dict[int, bytes] = {}

        def take(n: int, b: bytes, taken: dict[int, bytes] = taken) -> bool:
            try:
                b.decode("utf-8")
            except UnicodeDecodeError:
                return False
            taken[n] = b
            return True

        rows3, counted3, flags3 = _read(data, take)
        assert counted3 == counted and flags3 == flags
        assert rows3 == [r for r in plain if r[0] not in taken]
        assert all(yielded[n][0] == b and yielded[n][2] is None for n, b in taken.items())
    assert total > 1000  # the lane was offered lines

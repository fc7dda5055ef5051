"""File-level accumulators with bounded memory: findings sink, digest table, length histogram, type drift.

Memory per file: the findings kept in the report (``max_errors`` each of errors and warnings), a
length histogram of fixed size (about 2,600 bins), at most ``Drift.max_paths`` JSON paths, and the
digest tables used for duplicate rows, conflicting preferences and leakage: about 20 to 35 bytes per
distinct row each (an open-addressing table of 8-byte digests and 4-byte line numbers). So
duplicate detection is the only part that grows with the file, and it grows by tens of bytes per row.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from array import array
from pathlib import Path
from typing import IO, Any

from .._nesting import nested_deeper_than  # noqa: F401 - re-exported (the validator and its tests)
from ._report import Finding, LengthStats


def safe_text(text: str) -> str:
    """``text`` with lone surrogates (legal in a Python str, not in UTF-8) replaced by ``\\udXXX`` escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def digest64(data: bytes) -> int:
    """64-bit digest of ``data`` as a non-zero int: CPython's SipHash (``hash(bytes)``), keyed per process.

    About 5 times faster than BLAKE2b on 4 KB rows, with the same collision odds for a 64-bit digest
    (~n²/2⁶⁵: 3e-6 at 10M rows). Digests are only compared within one process (one run), never stored.
    """
    return (hash(data) & 0xFFFFFFFFFFFFFFFF) or 1


class DigestTable:
    """Set of 64-bit digests mapping each to the first line it was seen on, in flat arrays.

    Open addressing with linear probing over ``array('Q')`` keys and ``array('I')`` lines: 12 bytes per
    slot at a load factor of at most 0.7. ``add`` is O(1) amortised.
    """

    def __init__(self, capacity: int = 1 << 10):
        cap = 1
        while cap < capacity:
            cap <<= 1
        self._alloc(cap)
        self._n = 0

    def _alloc(self, cap: int) -> None:
        self._keys = array("Q", bytes(8 * cap))
        self._vals = array("I", bytes(4 * cap))
        self._mask = cap - 1
        self._limit = (cap * 7) // 10

    def __len__(self) -> int:
        return self._n

    def add(self, key: int, line: int) -> int:
        """Insert ``key`` (non-zero) seen at ``line`` (>= 1); return the earlier line if present, else 0."""
        keys, mask = self._keys, self._mask
        i = key & mask
        while True:
            k = keys[i]
            if k == 0:
                keys[i] = key
                self._vals[i] = min(line, 0xFFFFFFFF)
                self._n += 1
                if self._n > self._limit:
                    self._grow()
                return 0
            if k == key:
                return self._vals[i]
            i = (i + 1) & mask

    def get(self, key: int) -> int:
        """The line ``key`` was first seen on, or 0."""
        keys, mask = self._keys, self._mask
        i = key & mask
        while True:
            k = keys[i]
            if k == 0:
                return 0
            if k == key:
                return self._vals[i]
            i = (i + 1) & mask

    def _grow(self) -> None:
        old_keys, old_vals = self._keys, self._vals
        self._alloc(len(old_keys) * 2)
        keys, vals, mask = self._keys, self._vals, self._mask
        for j, k in enumerate(old_keys):
            if k:
                i = k & mask
                while keys[i]:
                    i = (i + 1) & mask
                keys[i] = k
                vals[i] = old_vals[j]

    def nbytes(self) -> int:
        """Bytes held by the two arrays."""
        return len(self._keys) * 12


class Histogram:
    """Fixed-bin histogram of non-negative ints: exact below 1,024, bins 1% wide above (constant memory)."""

    _LINEAR = 1024
    _RATIO = math.log(1.01)

    def __init__(self) -> None:
        self._bins = array("Q", bytes(8 * 3200))
        self.count = 0
        self.max = 0

    def add(self, value: int) -> None:
        """Record one value (negative values count as 0)."""
        if value < self._LINEAR:
            b = value if value > 0 else 0
        else:
            b = self._LINEAR + int(math.log(value / self._LINEAR) / self._RATIO)
            if b >= len(self._bins):
                b = len(self._bins) - 1
        self._bins[b] += 1
        self.count += 1
        if value > self.max:
            self.max = value

    def _bin_value(self, b: int) -> int:
        if b < self._LINEAR:
            return b
        return int(self._LINEAR * math.exp((b - self._LINEAR + 1) * self._RATIO))

    def percentile(self, q: float) -> int:
        """Smallest recorded bin value with at least ``q`` (0..1) of the values at or below it; capped by max."""
        if not self.count:
            return 0
        target = max(1, math.ceil(q * self.count))
        seen = 0
        for b, n in enumerate(self._bins):
            if n:
                seen += n
                if seen >= target:
                    return min(self._bin_value(b), self.max)
        return self.max

    def stats(self, unit: str) -> LengthStats:
        """p50/p90/p99/max as a ``LengthStats``."""
        return LengthStats(
            unit=unit,
            count=self.count,
            p50=self.percentile(0.5),
            p90=self.percentile(0.9),
            p99=self.percentile(0.99),
            max=self.max,
        )


_MIN_SHAPE_ITEMS = 6
"""Containers with fewer items are walked in full (fingerprinting them costs as much)."""
_MAX_SHAPE_KEYS = 64
"""Objects with more keys than this are always walked in full (their shape is not remembered)."""
_TYPE = {str: "string", int: "number", float: "number", bool: "boolean", dict: "object", list: "array"}


class Drift:
    """Tracks the JSON type seen at each path across rows; reports a path whose type changes.

    Paths use ``[*]`` for list items (``$.messages[*].tool_calls[*].function.arguments.room``). ``null`` is
    ignored (Arrow fills it), ``int`` and ``float`` are both ``number`` (Arrow widens to double). A second
    type at a path is what makes ``datasets``/Arrow schema inference fail at load time, far from the line.
    """

    def __init__(self, max_paths: int = 4096, max_depth: int = 24, max_shapes: int = 16384):
        self.max_paths = max_paths
        self.max_depth = max_depth
        self.max_shapes = max_shapes
        self._shapes: dict[str, dict[Any, tuple]] = {}
        self._n_shapes = 0
        self.first: dict[str, dict[str, int]] = {}
        self._child: dict[str, dict[str | None, str]] = {}
        self._n_child = 0
        self.capped = False
        self.too_deep = False

    def walk(
        self, value: Any, line: int, out: list[tuple[str, str, dict[str, int]]], path: str = "$", depth: int = 0
    ) -> None:
        """Record the types under ``value`` (a row or a subtree at ``path``) seen at ``line``.

        Appends ``(path, new_type, {type: first_line})`` to ``out`` for each path that gains a second
        (or further) type. Sets ``too_deep`` when nesting exceeds ``max_depth`` (not descended).

        Only new shapes are walked in full: an object whose keys and value types (a list whose set of
        item types) were already seen at ``path`` can add no new (path, type) pair at its own level, so
        only its containers are descended into, in the same order: the same findings in the same order
        as a full walk (``walk_plain``, tested). At most ``max_shapes`` shapes are remembered.
        """
        tv = type(value)
        t = _TYPE.get(tv)
        if t is None:
            return
        seen = self.first.get(path)
        if seen is None:
            if len(self.first) >= self.max_paths:
                self.capped = True
            else:
                self.first[path] = {t: line}
        elif t not in seen:
            seen[t] = line
            out.append((path, t, seen))
        if tv is not dict and tv is not list:
            return
        if depth >= self.max_depth:
            if value:
                self.too_deep = True
            return
        if len(value) >= _MIN_SHAPE_ITEMS:
            self._walk_shaped(value, tv, t, line, out, path, depth)
            return
        # a small container is as cheap to walk as to fingerprint: walk it here (walk_plain's loop)
        child = self._child.get(path)
        if child is None:
            child = self._child[path] = {}
        first = self.first
        if tv is dict:
            items: Any = value.items()
        else:
            sub = child.get(None) or self._sub(child, path, None)
            items = [(None, item) for item in value]
        for key, item in items:
            if item is None:
                continue
            if key is not None:
                sub = child.get(key) or self._sub(child, path, key)
            it = _TYPE.get(type(item))
            if it is None:
                continue
            if it == "object" or it == "array":
                self.walk(item, line, out, sub, depth + 1)
                continue
            seen = first.get(sub)
            if seen is None:
                if len(first) >= self.max_paths:
                    self.capped = True
                else:
                    first[sub] = {it: line}
            elif it not in seen:
                seen[it] = line
                out.append((sub, it, seen))

    def _walk_shaped(self, value: Any, tv: type, t: str, line: int, out: list, path: str, depth: int) -> None:
        """``walk``'s children of a large container, through the shape memo."""
        shapes = self._shapes.get(path)
        if tv is dict:
            if len(value) > _MAX_SHAPE_KEYS:
                self._walk_level(value, t, line, out, path, depth)
                return
            sig: Any = (tuple(value), tuple(map(type, value.values())))
            if shapes is not None:
                descend = shapes.get(sig)
                if descend is not None:
                    for key, sub in descend:
                        self.walk(value[key], line, out, sub, depth + 1)
                    return
        else:
            sig = frozenset(map(type, value))
            if shapes is not None:
                descend = shapes.get(sig)
                if descend is not None:
                    if descend:  # some items are containers: descend into each, in order
                        sub = descend[0][1]
                        for item in value:
                            ti = type(item)
                            if ti is dict or ti is list:
                                self.walk(item, line, out, sub, depth + 1)
                    return
        descend = self._walk_level(value, t, line, out, path, depth)
        if self._n_shapes < self.max_shapes:
            if shapes is None:
                shapes = self._shapes[path] = {}
            shapes[sig] = descend
            self._n_shapes += 1

    def _walk_level(self, value: Any, t: str, line: int, out: list, path: str, depth: int) -> tuple:
        """Full walk of one container's children; returns ``((key, sub_path), ...)`` of the children
        that are containers (objects: every such key; arrays: one ``(None, path[*])`` entry when any
        item is a container)."""
        child = self._child.get(path)
        if child is None:
            child = self._child[path] = {}
        first = self.first
        descend: list = []
        if t == "object":
            items: Any = value.items()
        else:
            sub = child.get(None) or self._sub(child, path, None)
            items = [(None, item) for item in value]
        for key, item in items:
            if item is None:
                continue
            if key is not None:
                sub = child.get(key) or self._sub(child, path, key)
            it = _TYPE.get(type(item))
            if it is None:
                continue
            if it == "object" or it == "array":
                if key is not None:
                    descend.append((key, sub))
                elif not descend:
                    descend.append((None, sub))
                self.walk(item, line, out, sub, depth + 1)
                continue
            seen = first.get(sub)
            if seen is None:
                if len(first) >= self.max_paths:
                    self.capped = True
                else:
                    first[sub] = {it: line}
            elif it not in seen:
                seen[it] = line
                out.append((sub, it, seen))
        return tuple(descend)

    def walk_plain(
        self, value: Any, line: int, out: list[tuple[str, str, dict[str, int]]], path: str = "$", depth: int = 0
    ) -> None:
        """``walk`` without the shape memo: every node visited (the reference the memo is tested against)."""
        t = _TYPE.get(type(value))
        if t is None:
            return
        self._record(path, t, line, out)
        if t != "object" and t != "array":
            return
        if depth >= self.max_depth:
            if value:
                self.too_deep = True
            return
        child = self._child.get(path)
        if child is None:
            child = self._child[path] = {}
        first = self.first
        if t == "object":
            items: Any = value.items()
        else:
            sub = child.get(None) or self._sub(child, path, None)
            items = [(None, item) for item in value]
        for key, item in items:
            if item is None:
                continue
            if key is not None:
                sub = child.get(key) or self._sub(child, path, key)
            it = _TYPE.get(type(item))
            if it is None:
                continue
            if it == "object" or it == "array":
                self.walk_plain(item, line, out, sub, depth + 1)
                continue
            seen = first.get(sub)
            if seen is None:
                if len(first) >= self.max_paths:
                    self.capped = True
                else:
                    first[sub] = {it: line}
            elif it not in seen:
                seen[it] = line
                out.append((sub, it, seen))

    def walk_key(self, key: str, value: Any, line: int, out: list) -> None:
        """Walk ``value`` found under the row's top-level ``key`` (see ``walk``)."""
        root = self._child.get("$")
        if root is None:
            root = self._child["$"] = {}
        sub = root.get(key)
        if sub is None:
            sub = self._sub(root, "$", key)
        self.walk(value, line, out, sub, 1)

    def _sub(self, child: dict, path: str, key: str | None) -> str:
        if key is None:
            sub = path + "[*]"
        else:
            sub = f"{path}.{key}" if _plain(key) else f"{path}[{json.dumps(key)}]"
        if self._n_child < self.max_paths * 4:
            child[key] = sub
            self._n_child += 1
        return sub

    def _record(self, path: str, t: str, line: int, out: list) -> None:
        seen = self.first.get(path)
        if seen is None:
            if len(self.first) >= self.max_paths:
                self.capped = True
            else:
                self.first[path] = {t: line}
        elif t not in seen:
            seen[t] = line
            out.append((path, t, seen))


def _plain(key: str) -> bool:
    return key.isidentifier()


class Sink:
    """Collects findings: counts every one, keeps the first ``max_items`` errors and warnings, spools all.

    When a list overflows (or when ``report_path`` is given, from the start) every finding is also
    written as one JSON object per line to ``report_path`` or to a temporary file
    (``<tmp>/dataset-validate-*.findings.jsonl``), whose path the report gives as ``full_report_path``.
    """

    def __init__(self, max_items: int, report_path: Path | None = None):
        self.max_items = max(0, max_items)
        self.errors: list[tuple] = []
        self.warnings: list[tuple] = []
        self.error_counts: dict[str, int] = {}
        self.warning_counts: dict[str, int] = {}
        self.error_count = 0
        self.warning_count = 0
        self.truncated = False
        self._seq = 0
        self._report_path = report_path
        self._fh: IO[str] | None = None
        self.full_report_path: str | None = None
        if report_path is not None:
            self._open(report_path)

    def _open(self, path: Path | None) -> None:
        if path is None:
            fd, name = tempfile.mkstemp(prefix="dataset-validate-", suffix=".findings.jsonl")
            self._fh = os.fdopen(fd, "w", encoding="utf-8")
            self.full_report_path = name
        else:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("w", encoding="utf-8")
            self.full_report_path = str(path)

    def _write(self, rec: tuple) -> None:
        assert self._fh is not None
        _, sev, line, path, code, msg, kind = rec
        self._fh.write(
            json.dumps({"line": line, "json_path": path, "code": code, "message": msg, "kind": kind, "severity": sev})
            + "\n"
        )

    def add(self, severity: str, line: int | None, path: str, code: str, message: str, kind: str | None) -> None:
        """Record one finding (``severity`` is ``"error"`` or ``"warning"``)."""
        if not message.isascii():
            message = safe_text(message)
        if not path.isascii():
            path = safe_text(path)
        self._seq += 1
        rec = (self._seq, severity, line, path, code, message, kind)
        if severity == "error":
            self.error_count += 1
            self.error_counts[code] = self.error_counts.get(code, 0) + 1
            kept = self.errors
        else:
            self.warning_count += 1
            self.warning_counts[code] = self.warning_counts.get(code, 0) + 1
            kept = self.warnings
        if len(kept) < self.max_items:
            kept.append(rec)
            if self._fh is not None:
                self._write(rec)
            return
        self.truncated = True
        if self._fh is None:
            self._open(None)
            for old in sorted(self.errors + self.warnings):
                self._write(old)
        self._write(rec)

    def close(self) -> None:
        """Flush and close the spool file, if any."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def findings(self, which: str) -> list[Finding]:
        """The kept ``"error"`` or ``"warning"`` findings as models, in emission order."""
        recs = self.errors if which == "error" else self.warnings
        return [
            Finding(line=line, json_path=path, code=code, message=msg, kind=kind, severity=sev)
            for _, sev, line, path, code, msg, kind in recs
        ]

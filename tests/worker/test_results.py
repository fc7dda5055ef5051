"""results.csv: header once, rows never interleaved or split, even with several processes appending
long rows at the same time."""

from __future__ import annotations

import csv
import multiprocessing

import pytest

from agent_rl_sandbox.worker import RESULT_COLUMNS, append_result, read_results

ROWS_PER_WRITER = 40
WRITERS = 4


def _writer(path: str, n: int) -> None:
    from pathlib import Path

    for i in range(ROWS_PER_WRITER):
        # ~20 KB rows: far above PIPE_BUF, so only the lock keeps them whole.
        append_result(
            Path(path),
            {
                "job_id": f"w{n}-{i}",
                "status": "succeeded",
                "workspace": f"/ws/{n}/" + "x" * 20_000,
                "route": 'a,"b"\nc',
            },
        )


def test_concurrent_writers_never_interleave(tmp_path):
    path = tmp_path / "jobs" / "results.csv"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), n)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(RESULT_COLUMNS)
    assert all(len(r) == len(RESULT_COLUMNS) for r in rows)
    body = read_results(path)
    assert len(body) == WRITERS * ROWS_PER_WRITER
    assert sorted(r["job_id"] for r in body) == sorted(
        f"w{n}-{i}" for n in range(WRITERS) for i in range(ROWS_PER_WRITER)
    )
    for r in body:
        n = r["job_id"][1:].split("-")[0]
        assert r["workspace"] == f"/ws/{n}/" + "x" * 20_000
        assert r["route"] == 'a,"b"\nc'


def test_header_once_and_unknown_columns_refused(tmp_path):
    path = tmp_path / "results.csv"
    append_result(path, {"job_id": "a"})
    append_result(path, {"job_id": "b", "baseline": 0.5, "final_score": None})
    assert path.read_text().count("job_id,created") == 1
    assert [(r["job_id"], r["baseline"], r["final_score"]) for r in read_results(path)] == [
        ("a", "", ""),
        ("b", "0.5", ""),
    ]
    with pytest.raises(ValueError, match="Next step"):
        append_result(path, {"job_id": "c", "prompt": "x"})
    assert read_results(tmp_path / "absent.csv") == []

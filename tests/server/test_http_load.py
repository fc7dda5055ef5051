"""The short version of ``bench/http_load.py``: two ``serve --http`` processes on one PostgreSQL
database, agents driven concurrently through the SDK's streamable-HTTP client with their tokens,
then the store checked: no step lost or duplicated, every row attributed to its identity."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "http_load.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_http_load", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.postgres
@pytest.mark.slow
def test_two_servers_three_agents_lose_and_misattribute_nothing(tmp_path, pg_url):
    report, problems = _bench().run_load(pg_url, tmp_path, agents=3, steps=12, execs=1, timeout_s=120, baseline_calls=5)
    assert problems == []
    assert report.steps == 36 and len(report.latency["trajectory_log_step"]) == 36
    assert {"sandbox_reset", "sandbox_exec", "trajectory_start", "trajectory_finish", "sandbox_finish"} <= set(
        report.latency
    )
    assert any("p50" in line for line in report.lines())

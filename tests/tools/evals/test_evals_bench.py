"""bench/scoring.py runs end to end (tiny sizes; the real run is `python bench/scoring.py`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "scoring.py"


def test_bench_scoring_smoke(capsys):
    spec = importlib.util.spec_from_file_location("bench_scoring", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--sizes", "40,80"]) in (0, 1)  # tiny sizes are too noisy to judge linearity
    out = capsys.readouterr().out
    assert "generated 80 trajectories" in out and "per-trajectory time" in out and "json.loads" in out
    items = mod.generate(30)
    assert len({key for _, key in items}) == 2 and len(items) == 30


def test_bench_score_suite_skips_clearly_without_a_port_daddy_checkout(capsys, monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("bench_score_suite", BENCH.parent / "score_suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.delenv("PORT_DADDY_DIR", raising=False)
    assert mod.main(["--sizes", "10"]) == 0
    assert mod.main(["--port-daddy", str(tmp_path), "--sizes", "10"]) == 0
    out = capsys.readouterr().out
    assert "SKIP: no Port Daddy checkout" in out and "trajectory_eval_harness.mjs not found" in out

"""The optimised validator gives exactly the output the code before issue 16's optimisations gave.

``golden_validate_reports.json`` was written by ``validate_corpus.py --write`` from that code (commit
65bc285); every case of the corpus (real samples, every kind, late drift at row 10,000, hostile bytes,
truncated reports, inline rows) must give the same report (same JSON bytes, paths blanked) and the same
full findings file.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("validate_corpus", Path(__file__).with_name("validate_corpus.py"))
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

GOLDEN = json.loads(corpus.GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    return tmp, {name: (path, kw) for name, path, kw in corpus.cases(tmp / "files")}


def test_the_corpus_is_the_pinned_one(written):
    _, cases = written
    missing = set(GOLDEN) - set(cases) - set(corpus.inline_cases())
    assert all(name.startswith("shared/") for name in missing), missing
    assert set(cases) <= set(GOLDEN)


@pytest.mark.parametrize("name", sorted(n for n in GOLDEN if not n.startswith("inline/")))
def test_file_report_unchanged(written, name):
    tmp, cases = written
    if name not in cases:
        pytest.skip(f"{name}: the shared samples are not on this machine")
    path, kw = cases[name]
    got = corpus.run_case(path, kw, tmp)
    want = GOLDEN[name]
    assert got["report"] == want["report"]
    assert got["report_sha256"] == want["report_sha256"]
    assert got["findings_sha256"] == want["findings_sha256"]


@pytest.mark.parametrize("name", sorted(corpus.inline_cases()))
def test_inline_report_unchanged(name):
    rows, kw = corpus.inline_cases()[name]
    assert corpus.run_inline(rows, kw) == GOLDEN[name]


def test_late_drift_is_in_the_pinned_findings():
    """Row 10,000 changes types: the drift is reported there (checked in the pinned full findings)."""
    report = GOLDEN["trl_tools_late_drift"]["report"]
    assert report["error_counts_by_code"]["type_drift"] == 9
    lines = {f["line"] for f in report["errors"] if f["code"] == "type_drift"}
    assert lines <= {n for n in range(10_000, 10_020)}

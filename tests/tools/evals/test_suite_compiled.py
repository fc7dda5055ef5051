"""The suite scorer compiled by mypyc (``_suite_hot_c``) writes the pure module's bytes.

``make install`` compiles ``tools/_suite_hot.py`` (``scripts/compile_scorer.py``); ``tools._suite_fast``
loads the extension only when it was built from the ``_suite_hot.py`` beside it. These tests run the
whole scorer both ways on the golden suites and on generated ones (hostile values, a spooled report,
compact tasks, tiny chunks) and compare every byte; without a build (no C compiler, mypyc absent,
a build that failed) the comparisons skip and only the fallback is checked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import zlib
from pathlib import Path

import pytest

from agent_rl_sandbox.tools import _suite_fast as fast
from agent_rl_sandbox.tools import _suite_hot

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "port_daddy"
SUITES = [FIXTURES / f"{n}.suite.json" for n in ("claim_before_edit", "grouped_attempts", "self_report_only")]
SUITES += [FIXTURES / "golden" / f"{n}.suite.json" for n in ("generated", "hostile")]


def _compiled():
    try:
        from agent_rl_sandbox.tools import _suite_hot_c  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _suite_hot_c


needs_build = pytest.mark.skipif(
    not fast.COMPILED, reason="the scorer is not compiled here (make install builds it where mypyc and cc are)"
)


def _pure_scorer():
    """A second copy of ``tools._suite_fast`` loaded with ``AGENT_RL_SANDBOX_PURE_PYTHON=1``."""
    spec = importlib.util.spec_from_file_location("_suite_fast_pure_copy", fast.__file__)
    mod = importlib.util.module_from_spec(spec)
    old = os.environ.get("AGENT_RL_SANDBOX_PURE_PYTHON")
    os.environ["AGENT_RL_SANDBOX_PURE_PYTHON"] = "1"
    try:
        spec.loader.exec_module(mod)
    finally:
        if old is None:
            del os.environ["AGENT_RL_SANDBOX_PURE_PYTHON"]
        else:
            os.environ["AGENT_RL_SANDBOX_PURE_PYTHON"] = old
    assert mod.COMPILED is False and mod._hot is _suite_hot
    return mod


def _bytes(mod, path: Path, **kw) -> bytes:
    out: list[bytes] = []
    mod.score_suite_to(str(path), path.name, out.append, **kw)
    return b"".join(out)


def _generate():
    spec = importlib.util.spec_from_file_location("suite_gen", ROOT / "bench" / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


def test_the_compiled_module_is_used_only_when_built_from_this_source(monkeypatch):
    compiled = _compiled()
    if compiled is None:
        assert fast.COMPILED is False and fast._hot is _suite_hot
        pytest.skip("no compiled scorer here: the pure module is in use, as it should be")
    monkeypatch.delenv("AGENT_RL_SANDBOX_PURE_PYTHON", raising=False)
    fresh = compiled.SOURCE_CRC == zlib.crc32(Path(_suite_hot.__file__).read_bytes())
    assert fast._load_hot() == ((compiled, True) if fresh else (_suite_hot, False))
    monkeypatch.setattr(compiled, "SOURCE_CRC", compiled.SOURCE_CRC ^ 1)  # as if _suite_hot.py was edited
    assert fast._load_hot() == (_suite_hot, False)
    monkeypatch.undo()
    monkeypatch.setenv("AGENT_RL_SANDBOX_PURE_PYTHON", "1")
    assert fast._load_hot() == (_suite_hot, False)


@needs_build
@pytest.mark.parametrize("suite", SUITES, ids=[s.name for s in SUITES])
def test_compiled_and_pure_write_the_same_report(suite):
    pure = _pure_scorer()
    for chunk in (64, fast.CHUNK_BYTES):
        assert _bytes(fast, suite, chunk=chunk) == _bytes(pure, suite, chunk=chunk)
    assert _bytes(fast, suite) == (FIXTURES / "golden" / suite.name.replace(".suite", ".report")).read_bytes()


@needs_build
@pytest.mark.parametrize("seed", [3, 4])
def test_compiled_and_pure_agree_on_generated_suites_spooled_and_compact(tmp_path, seed, monkeypatch):
    doc = _generate()(300, seed=seed, hostile=True)
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    pure = _pure_scorer()
    want = _bytes(pure, path)
    assert _bytes(fast, path) == want
    for mod in (fast, pure):  # the report spooled to a file, tasks kept as text
        monkeypatch.setattr(mod, "SPOOL_MEMORY_BYTES", 4096)
        monkeypatch.setattr(mod, "COMPACT_TASKS_BYTES", 0)
        monkeypatch.setattr(mod, "TASK_CACHE", 8)
    assert _bytes(fast, path, chunk=500) == want
    assert _bytes(pure, path, chunk=500) == want


@needs_build
def test_compiled_and_pure_decline_the_same_inputs(tmp_path):
    pure = _pure_scorer()
    bad = [
        {"tasks": [{"id": "a", "expectedEvidence": [{"exitCode": 0.0}]}], "trajectories": []},
        {"tasks": [{"id": "a"}], "trajectories": [{"taskId": "a", "artifacts": [{"kind": "store_verdict"}]}]},
        {"tasks": [{"id": "a", "expected_actions": []}], "trajectories": []},
        {"tasks": [{"id": "a"}], "trajectories": [{"taskId": "a", "actions": [{"tool": 3}]}]},
    ]
    for i, doc in enumerate(bad):
        path = tmp_path / f"bad{i}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        for mod in (fast, pure):
            with pytest.raises(mod.Declined):
                _bytes(mod, path)

"""The validator's per-row fast path compiled by mypyc (``_fast_hot_c``) gives the pure module's reports,
and the spliced decode (a row's known ``tools`` text left out of the typed decode) gives the whole row's.

``make install`` compiles ``tools/datasets/_fast_hot.py`` (``scripts/compile_scorer.py``); ``_fast`` loads
the extension only when it was built from the ``_fast_hot.py`` beside it (``tools._compiled.load_hot``).
Without a build the compiled-against-pure comparisons skip; the rest runs on whichever module is in use,
compared with the Python path (``_validate.FAST_PATH`` off).
"""

from __future__ import annotations

import importlib.util
import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from agent_rl_sandbox.tools import _compiled
from agent_rl_sandbox.tools.datasets import _fast, _fast_hot, _validate

HERE = Path(__file__).resolve().parent


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_compiled_test_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


corpus = _load("validate_corpus")
typed = _load("test_datasets_typed")
KIND = "trl.language_modeling"

needs_build = pytest.mark.skipif(
    not _fast.COMPILED, reason="the fast path is not compiled here (make install builds it where mypyc and cc are)"
)


class _PureFastPath(_fast.FastPath):
    """``FastPath`` on the pure ``_fast_hot`` module, whichever ``_fast`` loaded."""

    def __init__(self) -> None:
        self.state = _fast_hot.State()


def _runs(
    monkeypatch: pytest.MonkeyPatch, path: Path, tmp: Path, kw: dict, slow: bool = True
) -> dict[str, tuple[dict, int]]:
    """Render of ``validate_file(path, **kw)`` per path taken (``fast``, ``slow`` unless ``slow`` is False,
    and ``pure`` when a compiled module is in use), with the rows the fast path handled."""
    out: dict[str, tuple[dict, int]] = {}
    sides: list[tuple[str, Any, bool]] = [("fast", _fast.FastPath, True)]
    if slow:
        sides.append(("slow", _fast.FastPath, False))
    if _fast.COMPILED:
        sides.append(("pure", _PureFastPath, True))
    for name, cls, on in sides:
        made: list[Any] = []

        def factory(cls: Any = cls, made: list = made) -> Any:
            made.append(cls())
            return made[-1]

        with monkeypatch.context() as m:
            m.setattr(_validate, "FastPath", factory)
            m.setattr(_validate, "FAST_PATH", on)
            out[name] = (corpus.run_case(path, kw, tmp), sum(fp.handled for fp in made))
    return out


def test_the_compiled_module_is_used_only_when_built_from_this_source(monkeypatch):
    try:
        from agent_rl_sandbox.tools.datasets import _fast_hot_c as compiled  # type: ignore[attr-defined]
    except ImportError:
        assert _fast.COMPILED is False and _fast._hot is _fast_hot
        pytest.skip("no compiled fast path here: the pure module is in use, as it should be")
    load = ("agent_rl_sandbox.tools.datasets", "_fast_hot")
    monkeypatch.delenv(_compiled.PURE_ENV, raising=False)
    fresh = compiled.SOURCE_CRC == zlib.crc32(Path(_fast_hot.__file__).read_bytes())
    assert _compiled.load_hot(*load) == ((compiled, True) if fresh else (_fast_hot, False))
    monkeypatch.setattr(compiled, "SOURCE_CRC", compiled.SOURCE_CRC ^ 1)  # as if _fast_hot.py was edited
    assert _compiled.load_hot(*load) == (_fast_hot, False)
    monkeypatch.undo()
    monkeypatch.setenv(_compiled.PURE_ENV, "1")
    assert _compiled.load_hot(*load) == (_fast_hot, False)


@needs_build
def test_compiled_and_pure_give_the_golden_corpus_reports(tmp_path, monkeypatch):
    """Both against each other only: ``test_datasets_typed`` compares the module in use with the Python path
    on this corpus (and the golden reports pin that)."""
    handled = 0
    for name, path, kw in corpus.cases(tmp_path / "files"):
        kw = {k: v for k, v in kw.items() if k != "kind"} | {"kind": KIND}
        runs = _runs(monkeypatch, path, tmp_path, kw, slow=False)
        assert runs["fast"] == runs["pure"], name
        handled += runs["fast"][1]
    assert handled > 10_000


def _tools_first(line: str) -> str:
    """The same row with ``tools`` as its first member (``{"tools": K, "messages": ...}``)."""
    row = json.loads(line)
    if type(row) is not dict or "tools" not in row:
        return line
    return json.dumps({"tools": row.pop("tools"), **row})


def _splice_variants(line: str, rnd: random.Random) -> str:
    """Spellings around the ``tools`` member the spliced decode must not misread."""
    k = rnd.randrange(8)
    tools = json.dumps(corpus.TOOLS)
    if k == 0:  # a second tools member before the last one (the last wins)
        return line.replace('{"messages"', '{"tools": [], "messages"', 1)
    if k == 1:  # a second one after the first
        return line.replace('{"tools": ' + tools + ", ", '{"tools": ' + tools + ', "tools": null, ', 1)
    if k == 2:  # the key spelled with an escape
        return line.replace('"tools": ', '"t\\u006fols": ', 1)
    if k == 3:  # other spacing
        return line.replace('"tools": ', '"tools" : ', 1)
    if k == 4:  # trailing whitespace after the object
        return line + " "
    if k == 5:  # another column after the tools
        return line[:-1] + ', "meta": 1}' if line.endswith("]}") else line
    if k == 6:  # the known text inside a string of the last message
        return line.replace('"content": "done', '"content": "x, \\"tools\\": ' + tools.replace('"', '\\"') + " done", 1)
    return line.replace(tools, tools[:-1] + ", " + json.dumps(corpus.TOOLS[0]) + "]", 1)  # a longer list


@pytest.mark.parametrize("order", ["last", "first"])
def test_spliced_rows_give_the_whole_rows_reports(tmp_path, monkeypatch, order):
    rnd = random.Random(7 if order == "last" else 8)
    lines = []
    for i in range(1200):
        row = typed._clean(rnd, i)
        if rnd.random() < 0.15:
            row = typed._break(rnd, row)
        line = json.dumps(row)
        if order == "first":
            line = _tools_first(line)
        if rnd.random() < 0.2:
            line = _splice_variants(line, rnd)
        lines.append(line)
    path = tmp_path / "spliced.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for kw in ({"kind": KIND}, {}):
        runs = _runs(monkeypatch, path, tmp_path, kw)
        assert runs["fast"][0] == runs["slow"][0], kw
        if "pure" in runs:
            assert runs["pure"] == runs["fast"], kw
        assert runs["fast"][1] > 600, (kw, runs["fast"][1])

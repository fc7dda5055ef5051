"""Every finding code is registered, documented with its source, and asserted by a test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import agent_rl_sandbox
from agent_rl_sandbox.tools.datasets import CODES, OPENAI_RULES, STRUCTURAL_CODES

PKG = Path(agent_rl_sandbox.__file__).parent / "tools" / "datasets"
FORMATS = Path(agent_rl_sandbox.__file__).parent / "tools" / "formats"
"""The shared ATIF reader emits the ATIF pairing codes the validator reports (issue 9: one reader)."""
ROOT = Path(agent_rl_sandbox.__file__).parents[1]
DOC = ROOT / "docs" / "dataset-validation.md"
TESTS = Path(__file__).parent

_EMIT = [
    re.compile(r'ctx\.(?:err|warn)\(\s*(?:[^,()]|\([^()]*\))+,\s*"(\w+)"'),
    re.compile(r'sink\.add\(\s*(?:sev|"error"|"warning"),\s*[^,]+,\s*[^,]+,\s*"(\w+)"'),
    re.compile(r'ReadProblem\(\s*[^,]+,\s*"(\w+)"'),
    re.compile(r'out\.append\(\s*\(\s*[^,]+,\s*"(\w+)"'),
    re.compile(r'"(\w+)" if \w+ else "\w+"'),
    re.compile(r'"\w+" if \w+ else "(\w+)"'),
    re.compile(r'code = "(\w+)"'),
    re.compile(r'AtifIssue\(\s*(?:[^,()]|\([^()]*\))+,\s*"(\w+)"'),
]


def emitted_codes() -> set[str]:
    found: set[str] = set()
    for path in [*PKG.glob("_*.py"), FORMATS / "atif.py"]:
        text = path.read_text(encoding="utf-8")
        for pattern in _EMIT:
            found.update(pattern.findall(text))
    return found - {"error", "warning"}


def test_every_emitted_code_is_registered():
    emitted = emitted_codes()
    assert len(emitted) > 60
    assert emitted - set(CODES) == set()
    assert set(CODES) - emitted == set(), "registered codes nothing emits"


def test_structural_codes_are_registered():
    assert STRUCTURAL_CODES <= set(CODES)


def test_every_code_is_documented_and_the_doc_names_its_sources():
    doc = DOC.read_text(encoding="utf-8")
    missing = [code for code in CODES if f"`{code}`" not in doc]
    assert not missing, missing
    for source in ("dataset_formats", "MiniMind", "lm_dataset.py", "Chat_finetuning_data_prep", "harbor"):
        assert source in doc, source
    for rule in OPENAI_RULES:
        assert rule.id in doc, rule.id


def test_every_code_is_asserted_by_a_test():
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in TESTS.glob("test_datasets_*.py") if p.name != Path(__file__).name
    )
    untested = [code for code in CODES if f'"{code}"' not in text and code != "internal_error"]
    assert not untested, untested


def test_importing_the_validator_stays_light():
    code = (
        "import sys, agent_rl_sandbox.tools.datasets as d\n"
        "d.validate_rows([{'text': 'a'}])\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'trl', 'datasets', 'tokenizers', 'numpy', 'pandas')"
        " if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

"""The JSON Schema files in agent_rl_sandbox/schemas/datasets are the ones the code builds and uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import agent_rl_sandbox
from agent_rl_sandbox.tools.datasets import KINDS, load_schema, schema_path
from agent_rl_sandbox.tools.datasets._schemas import build_schema, schema_filename

SCHEMA_DIR = Path(agent_rl_sandbox.__file__).parent / "schemas" / "datasets"


def test_one_schema_file_per_kind_and_nothing_else():
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.json")) == sorted(schema_filename(k) for k in KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_schema_file_is_the_built_schema_and_is_the_one_loaded(kind):
    path = SCHEMA_DIR / schema_filename(kind)
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk == build_schema(kind), "regenerate: python -m agent_rl_sandbox.tools.datasets._schemas"
    assert load_schema(kind) == on_disk
    assert schema_path(kind).resolve() == path.resolve()
    Draft202012Validator.check_schema(on_disk)
    assert on_disk["title"] == kind and "Source:" in on_disk["description"]


def test_unknown_kind_has_no_schema():
    with pytest.raises(KeyError):
        load_schema("nope")


def test_bench_baseline_uses_the_same_schema_files():
    bench = (Path(agent_rl_sandbox.__file__).parents[1] / "bench" / "validate.py").read_text(encoding="utf-8")
    # the peer validates against load_schema(kind), the validator runs validate_file(path, kind=kind)
    assert "load_schema(kind)" in bench and "validate_file(path, kind=kind)" in bench
    assert 'KINDS = {"trl": "trl.language_modeling", "openai": "openai.chat"}' in bench


def test_trajectory_suite_schema_is_the_projects_suite_model():
    """One truth for suites: the evals harness's pydantic model; the kind's schema is generated from it."""
    from agent_rl_sandbox.schemas.reward import PortDaddySuite

    model = PortDaddySuite.model_json_schema(by_alias=True)
    ours = load_schema("trajectory_suite")
    for key in ("$defs", "properties", "required", "type"):
        assert ours.get(key) == model.get(key), key

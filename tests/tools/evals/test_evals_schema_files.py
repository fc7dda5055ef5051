"""The committed JSON Schema files equal the ones generated from the pydantic models, and they accept
and reject what the models accept and reject."""

from __future__ import annotations

import json
import tomllib

import jsonschema
import pytest

from agent_rl_sandbox.schemas.reward import GatesConfig, RewardSpec
from agent_rl_sandbox.tools.evals import BUILTIN_GATES
from agent_rl_sandbox.tools.evals.schema_files import SCHEMA_DIR, SCHEMA_FILES, render_schema, write_schema_files
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR

REGENERATE = "run `python -m agent_rl_sandbox.tools.evals.schema_files` and commit the result"


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_committed_schema_equals_generated(name):
    path = SCHEMA_DIR / name
    assert path.is_file(), f"{name} missing: {REGENERATE}"
    assert path.read_text(encoding="utf-8") == render_schema(name), f"{name} is stale: {REGENERATE}"


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_schema_is_valid_draft_2020_12(name):
    jsonschema.Draft202012Validator.check_schema(json.loads(render_schema(name)))


def test_generator_writes_identical_files(tmp_path):
    for p in write_schema_files(tmp_path):
        assert p.read_text(encoding="utf-8") == (SCHEMA_DIR / p.name).read_text(encoding="utf-8")


def _validator(name: str):
    return jsonschema.Draft202012Validator(json.loads((SCHEMA_DIR / name).read_text()))


def test_builtin_task_specs_validate_against_the_schema():
    v = _validator("reward_spec.schema.json")
    for toml_path in BUILTIN_TASKS_DIR.rglob("task.toml"):
        reward = tomllib.loads(toml_path.read_text())["reward"]
        v.validate(reward)
        RewardSpec.model_validate(reward)


@pytest.mark.parametrize(
    "doc",
    [
        {"criteria": []},
        {"criteria": [{"id": "a", "type": "no_such"}]},
        {"criteria": [{"id": "a", "type": "budget", "weight": -1}]},
        {"criteria": [{"id": "a", "type": "budget"}], "aggregation": "sum"},
        {"criteria": [{"id": "a", "type": "budget"}], "pass_threshold": 2},
        {"criteria": [{"id": "a b", "type": "budget"}]},
    ],
)
def test_schema_and_model_both_reject(doc):
    with pytest.raises(jsonschema.ValidationError):
        _validator("reward_spec.schema.json").validate(doc)
    with pytest.raises(ValueError):
        RewardSpec.model_validate(doc)


def test_gates_schema_accepts_builtin_gates():
    doc = GatesConfig(gates=dict(BUILTIN_GATES)).model_dump(mode="json")
    _validator("eval_gates.schema.json").validate(doc)
    with pytest.raises(jsonschema.ValidationError):
        _validator("eval_gates.schema.json").validate({"gates": {"x": {"min_pass_rate": 1.5}}})


def test_port_daddy_schema_uses_camel_case():
    props = json.loads(render_schema("port_daddy_suite.schema.json"))["properties"]
    assert {"agent", "rewardSpec", "tasks", "trajectories", "unhooks"} <= set(props)

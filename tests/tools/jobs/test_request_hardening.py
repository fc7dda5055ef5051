"""Red-team regressions for ``training_request`` through the real in-process MCP client: folders that
are not models, a dataset the agent wrote in its own sandbox (readable because the home sits under the
server's working folder), and hyperparameters that would publish, write elsewhere or run remote code.
Each refusal names the field."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from agent_rl_sandbox.schemas.jobs import KNOWN_HYPERPARAMETERS, JobSpec
from agent_rl_sandbox.server.app import build_server
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.store import utcnow

pytestmark = pytest.mark.anyio

ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def hard(tmp_path, monkeypatch):
    """Services whose home sits under the server's working folder (the red team's setup), with one
    operator data folder and one real-looking model folder."""
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "sft.jsonl").write_text((json.dumps(ROW) + "\n") * 3)
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "tokenizer_config.json").write_text("{}")
    s = Services.build(Settings(home=tmp_path / "home", data_dirs=(data,), models=("tiny-model",)))
    yield s, model
    s.close()


def _spec(services: Services, **extra) -> dict:
    return {
        "route": "sft",
        "trainer": "sft",
        "base_model": "tiny-model",
        "dataset": {"kind": "file", "path": str(services.settings.data_dirs[0] / "sft.jsonl")},
        "gate": {"name": "deploy", "behaviour": "claim-before-edit"},
        "reason": "teach claiming",
        **extra,
    }


async def test_base_model_must_be_a_model_folder_or_a_registry_name(hard, tmp_path):
    services, model = hard
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    async with Client(build_server(services=services)) as agent:
        for bad in (str(venv), "/usr"):
            res = await agent.call_tool("training_request", _spec(services, base_model=bad))
            assert res.is_error and "field `base_model`" in _text(res) and "not a model folder" in _text(res), bad
            assert "config.json" in _text(res) and "Next step" in _text(res)
        for good in (str(model), "tiny-model"):
            res = await agent.call_tool("training_request", _spec(services, base_model=good))
            assert not res.is_error, _text(res)


async def test_a_dataset_written_inside_the_agents_sandbox_is_refused(hard):
    services, _ = hard
    async with Client(build_server(services=services)) as agent:
        reset = (await agent.call_tool("sandbox_reset", {"task_id": "claim-before-edit"})).structured_content
        sid = reset["sandbox_id"]
        rows = (json.dumps(ROW) + "\n") * 3
        wrote = await agent.call_tool(
            "sandbox_write_file", {"sandbox_id": sid, "path": "poison.jsonl", "content": rows}
        )
        assert not wrote.is_error, _text(wrote)
        poison = services.settings.sandboxes_dir / sid / "repo" / "poison.jsonl"
        assert poison.is_file()  # the red team's path, readable by the validator (home is under the cwd)
        res = await agent.call_tool("training_request", _spec(services, dataset={"kind": "file", "path": str(poison)}))
        assert res.is_error and "field `dataset.path`" in _text(res) and "sandbox" in _text(res), _text(res)
        # anything else under the server's working folder is refused too: only exports and data folders
        stray = services.settings.home.parent / "stray.jsonl"
        stray.write_text(rows)
        res = await agent.call_tool("training_request", _spec(services, dataset={"kind": "file", "path": str(stray)}))
        assert res.is_error and "not under this server's exports" in _text(res), _text(res)
        assert not (await agent.call_tool("training_request", _spec(services))).is_error


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("push_to_hub", True),
        ("hub_model_id", "red/team"),
        ("output_dir", "/etc"),
        ("report_to", "wandb"),
        ("trust_remote_code", True),
    ],
)
async def test_unknown_or_unsafe_hyperparameters_are_refused_with_the_accepted_names(hard, name, value):
    services, _ = hard
    async with Client(build_server(services=services)) as agent:
        res = await agent.call_tool("training_request", _spec(services, hyperparameters={name: value}))
        assert res.is_error, _text(res)
        text = _text(res)
        assert f"field `hyperparameters.{name}`" in text and "per_device_train_batch_size" in text
        assert services.jobs.repo.list()[1] == 0  # nothing stored


async def test_known_hyperparameters_pass_and_wrong_types_or_adapter_names_do_not(hard):
    services, _ = hard
    async with Client(build_server(services=services)) as agent:
        ok = await agent.call_tool(
            "training_request", _spec(services, hyperparameters={"num_train_epochs": 1, "packing": False})
        )
        assert not ok.is_error, _text(ok)
        res = await agent.call_tool("training_request", _spec(services, hyperparameters={"packing": 1}))
        assert res.is_error and "must be bool" in _text(res)
        res = await agent.call_tool("training_request", _spec(services, hyperparameters={"lora_r": 8}))
        assert res.is_error and "adapter.rank" in _text(res)


def test_the_trainers_plan_uses_the_same_list():
    from agent_rl_sandbox.trainers import _plan

    assert _plan.KNOWN_HYPERPARAMETERS is KNOWN_HYPERPARAMETERS


async def test_a_base_model_inside_the_agents_sandbox_is_refused(hard):
    """Red team (session 4): a 'model folder' the agent wrote in its own sandbox was accepted, and the
    spec hash bound only its path, so the agent could swap the model after a human approved."""
    services, _ = hard
    async with Client(build_server(services=services)) as agent:
        reset = (await agent.call_tool("sandbox_reset", {"task_id": "claim-before-edit"})).structured_content
        sid = reset["sandbox_id"]
        for name in ("m/config.json", "m/tokenizer.json"):
            wrote = await agent.call_tool("sandbox_write_file", {"sandbox_id": sid, "path": name, "content": "{}"})
            assert not wrote.is_error, _text(wrote)
        folder = services.settings.sandboxes_dir / sid / "repo" / "m"
        assert (folder / "config.json").is_file()
        res = await agent.call_tool("training_request", _spec(services, base_model=str(folder)))
        assert res.is_error and "field `base_model`" in _text(res) and "inside a sandbox" in _text(res), _text(res)
        assert services.jobs.repo.list()[1] == 0


async def test_a_local_base_models_content_is_in_the_spec_hash(hard):
    """A local model folder's digest is part of the canonical spec: the same folder gives the same
    hash, and any change of its files (weights, tokenizer, config) gives another."""
    services, model = hard
    (model / "model.safetensors").write_bytes(b"\0" * 4096)
    async with Client(build_server(services=services)) as agent:
        first = (await agent.call_tool("training_request", _spec(services, base_model=str(model)))).structured_content
        again = (await agent.call_tool("training_request", _spec(services, base_model=str(model)))).structured_content
        (model / "model.safetensors").write_bytes(b"\0" * 4095 + b"\1")
        changed = (await agent.call_tool("training_request", _spec(services, base_model=str(model)))).structured_content
    digest = first["spec"]["base_model_sha256"]
    assert digest.startswith("sha256:") and again["spec"]["base_model_sha256"] == digest
    assert first["job"]["spec_hash"] == again["job"]["spec_hash"]
    assert changed["spec"]["base_model_sha256"] != digest and changed["job"]["spec_hash"] != first["job"]["spec_hash"]
    named = services.jobs.request(JobSpec(**_spec(services)))
    assert "base_model_sha256" not in named.spec  # a registry name is the operator's: nothing to digest


async def test_hyperparameter_max_steps_above_the_cap_is_refused(hard):
    """Red team (session 4): ``hyperparameters.max_steps=999999999`` next to ``caps.max_steps=10`` was
    accepted: the approver would see a number the run does not obey."""
    services, _ = hard
    async with Client(build_server(services=services)) as agent:
        spec = _spec(services, caps={"max_steps": 10}, hyperparameters={"max_steps": 999_999_999})
        res = await agent.call_tool("training_request", spec)
        assert (
            res.is_error and "field `hyperparameters.max_steps`" in _text(res) and "caps.max_steps (10)" in _text(res)
        )
        ok = await agent.call_tool(
            "training_request", _spec(services, caps={"max_steps": 10}, hyperparameters={"max_steps": 10})
        )
        assert not ok.is_error, _text(ok)


async def test_a_store_selection_is_counted_and_cut_off_at_the_request_time(hard):
    """Red team (session 4): a store selection carried no row binding, so trajectories added after the
    approval joined the training data; the canonical spec now holds the request time
    (``dataset.created_before``), which the worker's export applies. Fresh user (session 4): a
    selection that exported nothing was accepted and approved, and failed only in the worker; it is
    now refused at request time, and an accepted one shows its row count to the approver."""
    from agent_rl_sandbox.tools.sandbox._scripted import play_task_script

    services, _ = hard
    spec = _spec(services, dataset={"kind": "store", "export": "sft", "behaviour": "claim-before-edit"})
    async with Client(build_server(services=services)) as agent:
        empty = await agent.call_tool("training_request", spec)
        assert empty.is_error and "field `dataset`" in _text(empty) and "exports no rows now" in _text(empty)
        assert services.jobs.repo.list()[1] == 0
        ep = await anyio.to_thread.run_sync(
            lambda: play_task_script(services.sandbox, "claim-before-edit/train-2", "oracle", agent="base")
        )
        assert ep.finish.get("reward") == 1.0, ep.finish
        res = await agent.call_tool("training_request", spec)
        assert not res.is_error, _text(res)
    out = res.structured_content
    cut = out["spec"]["dataset"]["created_before"]
    assert cut.endswith("Z") and cut <= utcnow()
    assert out["dataset_validation"] == {"store_rows_at_request": 1}

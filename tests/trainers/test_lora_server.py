"""The PEFT stand-in for vLLM's runtime-LoRA server, as a real child process on loopback, driven by
the project's own clients: the registry's deploy (files check, unhook dry run, load) through
:class:`VllmBackend`, chat completions through :class:`OpenAIChatModel` with the adapter's served
name and with the base name (the base answers exactly as the plain local base model does, the
adapter is really loaded), the kill switch's unload, and the server's refusals."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agent_rl_sandbox.agents.policy import ModelError, OpenAIChatModel
from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.tools.adapters import AdapterRegistry, BackendError, RouteTable, VllmBackend
from agent_rl_sandbox.tools.jobs import JobRepository, canonical_spec, later, spec_hash
from agent_rl_sandbox.tools.sandbox._episode_tools import tool_declarations
from agent_rl_sandbox.tools.store import Store

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "user", "content": "Set up the project and run the tests."}]


def _random_adapter(model_dir: Path, out: Path) -> Path:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(model_dir))
    peft = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    peft.save_pretrained(str(out))
    return out


def _job(store: Store) -> str:
    spec = {
        "route": "sft", "trainer": "sft", "base_model": "/models/tiny",
        "dataset": {"kind": "file", "path": "/data/sft.jsonl"}, "gate": {"behaviour": "setup-triage"},
        "reason": "serve it",
    }  # fmt: skip
    canon = canonical_spec(JobSpec.model_validate(spec), cwd=Path("/"), dataset_sha256="b" * 64)
    return (
        JobRepository(store.engine)
        .add(
            requester="agent-a",
            spec=canon,
            spec_hash=spec_hash(canon),
            expires_at=later(60),
            trainer="sft",
            behaviour="setup-triage",
        )  # fmt: skip
        .job_id
    )


def test_registry_deploys_through_the_peft_server_and_both_names_answer(tiny_model_dir, tmp_path):
    from agent_rl_sandbox.trainers.lora_server import lora_server_process
    from agent_rl_sandbox.trainers.policy_model import TransformersPolicy

    adapter = _random_adapter(tiny_model_dir, tmp_path / "ws" / "adapter")
    tools = tool_declarations(["sandbox_exec", "sandbox_finish"])
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        with lora_server_process(tiny_model_dir) as (url, base):
            assert url.startswith("http://127.0.0.1:") and base == str(tiny_model_dir)
            backend = VllmBackend(url, base, timeout_s=60)
            assert backend.served() == {base}
            reg = AdapterRegistry(store.engine, RouteTable(tmp_path / "routes.json"), lambda: backend, base_name=base)
            cand = reg.register_candidate(
                job_id=_job(store), behaviour="setup-triage", base_model=str(tiny_model_dir), spec_hash="h" * 64,
                path=adapter, gate_report={"passed": True},
            )  # fmt: skip
            dep = reg.deploy(cand.adapter_id, "alice")
            assert dep.state == "deployed" and dep.unhooks["ok"] is True
            assert [s["step"] for s in dep.unhooks["steps"]] == ["load", "disable", "disable", "rollback"]
            assert backend.served() == {base, dep.served_name}  # the .dryrun probe is gone
            assert reg.routes.read()["setup-triage"] == dep.served_name

            tuned = OpenAIChatModel(url, dep.served_name, timeout_s=60).respond(MESSAGES, tools, max_new_tokens=24)
            fallback = OpenAIChatModel(url, base, timeout_s=60).respond(MESSAGES, tools, max_new_tokens=24)
            local = TransformersPolicy(tiny_model_dir).respond(MESSAGES, tools, max_new_tokens=24)
            assert tuned.completion_tokens > 0 and fallback.completion_tokens > 0
            assert (fallback.text, [c.name for c in fallback.tool_calls]) == (
                local.text,
                [c.name for c in local.tool_calls],
            )  # the base name is the plain base model while an adapter is loaded
            assert tuned.text != fallback.text  # the random adapter really answers

            with pytest.raises(ModelError, match="404"):
                OpenAIChatModel(url, "no-such-adapter").respond(MESSAGES, [], max_new_tokens=4)
            with pytest.raises(BackendError, match="400") as exc:
                backend.load("x", tmp_path)  # no adapter_config.json
            assert exc.value.status == 400
            with pytest.raises(BackendError) as exc:
                backend.load(dep.served_name, adapter)  # already loaded
            assert exc.value.status == 400
            req = urllib.request.Request(url + "/v1/chat/completions", data=b"not json", method="POST")
            with pytest.raises(urllib.error.HTTPError) as bad:
                urllib.request.urlopen(req, timeout=10)
            assert bad.value.code == 400 and "not JSON" in json.loads(bad.value.read())["error"]["message"]

            reg.disable("setup-triage", "bob", reason="test: kill switch")
            assert reg.routes.read()["setup-triage"] == base
            assert backend.served() == {base}  # the kill switch's best-effort unload went through
            with pytest.raises(BackendError) as exc:
                backend.unload(dep.served_name)
            assert exc.value.status == 404
            after = OpenAIChatModel(url, base, timeout_s=60).respond(MESSAGES, tools, max_new_tokens=24)
            assert after.text == fallback.text  # unloading the last adapter leaves the plain base
    finally:
        store.close()

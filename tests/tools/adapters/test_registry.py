"""The adapter registry on SQLite and PostgreSQL against the loopback vLLM server: candidates with a
content hash, deploy refused without a backend, with changed files or with unhooks that fail their
dry run (each refusal recorded), deploy/rollback to the pinned previous adapter or the base model,
the kill switch without a backend, human-only enable, one audit row per change; and the kill switch
through the real MCP client, with no tool that deploys, enables or rolls forward."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_vllm import make_adapter

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.tools.adapters import AdapterError, AdapterRegistry, RouteTable, VllmBackend, content_hash
from agent_rl_sandbox.tools.jobs import JobRepository, canonical_spec, later, spec_hash

SPEC = {
    "route": "sft", "trainer": "sft", "base_model": "/models/tiny",
    "dataset": {"kind": "file", "path": "/data/sft.jsonl"}, "gate": {"behaviour": "claim-before-edit"},
    "reason": "teach claiming",
}  # fmt: skip


def _job(store) -> str:
    canon = canonical_spec(JobSpec.model_validate(SPEC), cwd=Path("/"), dataset_sha256="b" * 64)
    repo = JobRepository(store.engine)
    return repo.add(
        requester="agent-a", spec=canon, spec_hash=spec_hash(canon), expires_at=later(60),
        trainer="sft", behaviour="claim-before-edit",
    ).job_id  # fmt: skip


def _registry(store, tmp_path, backend=None, base="base-model") -> AdapterRegistry:
    return AdapterRegistry(store.engine, RouteTable(tmp_path / "routes.json"), lambda: backend, base_name=base)


def _candidate(reg, store, tmp_path, name: str):
    folder = make_adapter(tmp_path / "ws" / name / "adapter")
    return reg.register_candidate(
        job_id=_job(store), behaviour="claim-before-edit", base_model="/models/tiny", spec_hash="h" * 64,
        path=folder, gate_report={"gate": "deploy", "passed": True},
    )  # fmt: skip


def test_content_hash_covers_names_and_bytes_and_refuses_symlinks(tmp_path):
    a = make_adapter(tmp_path / "a")
    h = content_hash(a)
    (a / "adapter_model.safetensors").write_bytes(b"\1" * 64)
    assert content_hash(a) != h
    (a / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    assert content_hash(a) == h
    (a / "extra.bin").write_bytes(b"")
    assert content_hash(a) != h
    (a / "link").symlink_to("/etc/passwd")
    with pytest.raises(AdapterError, match="symlink"):
        content_hash(a)
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterError, match="empty"):
        content_hash(tmp_path / "empty")


def test_deploy_is_refused_without_backend_changed_files_or_failing_unhooks(store, tmp_path, fake_vllm):
    reg = _registry(store, tmp_path)
    a = _candidate(reg, store, tmp_path, "a")
    assert a.state == "candidate" and a.content_hash == content_hash(Path(a.path))
    with pytest.raises(AdapterError, match="no serving backend") as exc:
        reg.deploy(a.adapter_id, "alice")
    assert "AGENT_RL_SANDBOX_VLLM_URL" in exc.value.hint
    # unhooks fail: the server does not serve the base model the kill switch would route to
    wrong = _registry(store, tmp_path, VllmBackend(fake_vllm.url, "not-the-base"))
    with pytest.raises(AdapterError, match="unhooks not validated"):
        wrong.deploy(a.adapter_id, "alice")
    got = reg.get(a.adapter_id)
    assert got.state == "candidate" and got.unhooks["ok"] is False
    # files changed after the gate passed
    ok = _registry(store, tmp_path, VllmBackend(fake_vllm.url, "base-model"))
    (Path(a.path) / "adapter_model.safetensors").write_bytes(b"tampered")
    with pytest.raises(AdapterError, match="files changed"):
        ok.deploy(a.adapter_id, "alice")
    assert reg.get(a.adapter_id).state == "candidate"
    assert fake_vllm.loras == {}
    assert RouteTable(tmp_path / "routes.json").read() == {}
    reasons = [e.reason for e in reg.events(a.adapter_id)]
    assert reasons[0].startswith("gate passed") and sum(r.startswith("refused:") for r in reasons) == 2


def test_deploy_pins_previous_and_rollback_returns_to_it_then_to_base(store, tmp_path, fake_vllm):
    reg = _registry(store, tmp_path, VllmBackend(fake_vllm.url, "base-model"))
    routes = RouteTable(tmp_path / "routes.json")
    a = _candidate(reg, store, tmp_path, "a")
    b = _candidate(reg, store, tmp_path, "b")
    da = reg.deploy(a.adapter_id, "alice")
    assert da.state == "deployed" and da.previous_adapter_id is None and da.unhooks["ok"]
    assert routes.model_for("claim-before-edit", "base-model") == a.served_name
    assert set(fake_vllm.loras) == {a.served_name}  # the dry-run copy was unloaded again
    db = reg.deploy(b.adapter_id, "alice")
    assert db.previous_adapter_id == a.adapter_id and reg.get(a.adapter_id).state == "retired"
    assert routes.model_for("claim-before-edit", "base-model") == b.served_name
    with pytest.raises(AdapterError, match="not a candidate"):
        reg.deploy(a.adapter_id, "alice")
    back = reg.rollback("claim-before-edit", "alice")
    assert back.adapter_id == a.adapter_id and back.state == "deployed"
    assert reg.get(b.adapter_id).state == "retired"
    assert routes.model_for("claim-before-edit", "base-model") == a.served_name
    assert reg.rollback("claim-before-edit", "alice") is None  # a had no previous: the base model
    assert routes.read()["claim-before-edit"] == "base-model"
    with pytest.raises(AdapterError, match="no deployed or disabled adapter"):
        reg.rollback("claim-before-edit", "alice")
    ev = reg.events(a.adapter_id)
    assert [(e.from_state, e.to_state) for e in ev] == [
        (None, "candidate"), ("candidate", "deployed"), ("deployed", "retired"), ("retired", "deployed"),
        ("deployed", "retired"),
    ]  # fmt: skip
    assert all(e.who in ("alice", "worker") and e.at for e in ev)


def test_kill_switch_works_without_backend_and_enable_is_validated(store, tmp_path, fake_vllm):
    live = _registry(store, tmp_path, VllmBackend(fake_vllm.url, "base-model"))
    a = _candidate(live, store, tmp_path, "a")
    live.deploy(a.adapter_id, "alice")
    offline = _registry(store, tmp_path)  # the backend is gone: the switch must still work
    done = offline.disable("claim-before-edit", "mcp:agent-1", "agent", "misbehaving")
    assert done.state == "disabled"
    assert RouteTable(tmp_path / "routes.json").read() == {"claim-before-edit": "base-model"}
    n = len(offline.events(a.adapter_id))
    assert offline.disable("claim-before-edit", "mcp:agent-2", "agent") is None  # harmless twice: nothing deployed
    assert len(offline.events(a.adapter_id)) == n
    last = offline.events(a.adapter_id)[-1]
    assert (last.actor, last.who, last.from_state, last.to_state, last.reason) == (
        "agent", "mcp:agent-1", "deployed", "disabled", "misbehaving",
    )  # fmt: skip
    with pytest.raises(AdapterError, match="no serving backend"):
        offline.enable(a.adapter_id, "alice")
    again = live.enable(a.adapter_id, "alice")
    assert again.state == "deployed"
    assert RouteTable(tmp_path / "routes.json").read() == {"claim-before-edit": a.served_name}
    with pytest.raises(AdapterError, match="not disabled"):
        live.enable(a.adapter_id, "alice")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_kill_switch_through_mcp_and_no_tool_deploys(tmp_path, fake_vllm, store_url):
    from mcp import Client

    from agent_rl_sandbox.server.app import TOOLS, build_server
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings

    names = {t.name for t in TOOLS}
    assert {"adapter_list", "adapter_disable"} <= names
    assert not [n for n in names if any(w in n for w in ("deploy", "enable", "rollback", "roll_forward", "promote"))]
    human_only = {AdapterRegistry.deploy, AdapterRegistry.enable, AdapterRegistry.rollback}
    assert not human_only & {t.impl for t in TOOLS}

    settings = Settings(
        home=tmp_path / "home", database_url=store_url, vllm_url=fake_vllm.url, vllm_base_model="base-model"
    )
    services = Services.build(settings)
    try:
        a = _candidate(services.adapters, services.store, tmp_path, "a")
        services.adapters.deploy(a.adapter_id, "alice")
        async with Client(build_server(services=services)) as client:
            listed = await client.call_tool("adapter_list", {})
            assert not listed.is_error
            assert listed.structured_content["routes"] == {"claim-before-edit": a.served_name}
            assert listed.structured_content["adapters"][0]["state"] == "deployed"
            res = await client.call_tool("adapter_disable", {"behaviour": "claim-before-edit", "reason": "looks wrong"})
            assert not res.is_error
            out = res.structured_content
            assert out["route"] == "base-model" and out["disabled"]["state"] == "disabled"
            assert "Only a human" in out["note"]
            # hostile follow-ups: nothing an agent sends turns it back on
            for args in ({"behaviour": "claim-before-edit", "state": "deployed"}, {"behaviour": a.adapter_id}):
                await client.call_tool("adapter_disable", args)
            await client.call_tool("adapter_list", {"state": "deployed", "behaviour": "claim-before-edit"})
        assert services.adapters.get(a.adapter_id).state == "disabled"
        assert services.adapters.routes.read()["claim-before-edit"] == "base-model"
        assert a.served_name not in fake_vllm.loras  # unloaded best-effort after the route switched
        ev = services.adapters.events(a.adapter_id)[-1]
        assert (ev.from_state, ev.to_state, ev.reason) == ("deployed", "disabled", "looks wrong")
        assert ev.actor == "agent" and ev.who.startswith("mcp:")  # the MCP session's identity, audited
    finally:
        services.close()

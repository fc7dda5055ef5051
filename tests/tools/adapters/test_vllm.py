"""The vLLM backend over real HTTP against the loopback server, the route table the kill switch
flips, and the unhook dry run a deploy must pass."""

from __future__ import annotations

import threading

import pytest

from agent_rl_sandbox.tools.adapters import (
    BackendError,
    RouteTable,
    ServingBackend,
    VllmBackend,
    dry_run_unhooks,
)


def test_load_list_unload(fake_vllm, adapter_dir):
    be = VllmBackend(fake_vllm.url, "base-model")
    assert isinstance(be, ServingBackend)
    assert be.served() == {"base-model"}
    be.load("claim-v1", adapter_dir("a1"))
    assert be.served() == {"base-model", "claim-v1"}
    assert fake_vllm.requests[-2][1:] == (
        "/v1/load_lora_adapter",
        {"lora_name": "claim-v1", "lora_path": str(adapter_dir("a1"))},
    )
    with pytest.raises(BackendError, match="already been loaded") as exc:
        be.load("claim-v1", adapter_dir("a1"))
    assert exc.value.status == 400
    be.unload("claim-v1")
    assert be.served() == {"base-model"}
    with pytest.raises(BackendError, match="Next step") as exc:
        be.unload("claim-v1")
    assert exc.value.status == 404


def test_unreachable_server_is_a_backend_error():
    be = VllmBackend("http://127.0.0.1:9", "base-model", timeout_s=2)
    with pytest.raises(BackendError, match="unreachable.*Next step") as exc:
        be.served()
    assert exc.value.status is None


def test_kill_switch_routes_to_base_even_after_eviction(fake_vllm, adapter_dir, tmp_path):
    """vLLM evicts adapters past --max-cpu-loras; the route to the base name does not depend on them."""
    fake_vllm.max_loras = 1
    be = VllmBackend(fake_vllm.url, "base-model")
    routes = RouteTable(tmp_path / "routes.json")
    be.load("claim-v1", adapter_dir("a1"))
    routes.set("claim-before-edit", "claim-v1")
    assert routes.model_for("claim-before-edit", be.base_model) == "claim-v1"
    be.load("other-v1", adapter_dir("a2"))  # evicts claim-v1
    assert "claim-v1" not in be.served()
    routes.set("claim-before-edit", be.base_model)  # the kill switch: no backend call needed
    assert routes.model_for("claim-before-edit", be.base_model) == "base-model" in be.served()
    assert routes.model_for("unrouted", be.base_model) == "base-model"


def test_route_table_concurrent_writers_lose_nothing(tmp_path):
    routes = RouteTable(tmp_path / "a" / "routes.json")
    threads = [threading.Thread(target=routes.set, args=(f"b{i}", f"m{i}")) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert routes.read() == {f"b{i}": f"m{i}" for i in range(8)}
    routes.set("b0", None)
    assert "b0" not in routes.read()
    (tmp_path / "a" / "routes.json").write_text("[garbage")
    assert routes.read() == {}


def test_dry_run_passes_and_leaves_nothing_loaded(fake_vllm, adapter_dir):
    be = VllmBackend(fake_vllm.url, "base-model")
    check = dry_run_unhooks(be, name="claim-v2", path=adapter_dir("a2"), previous=None)
    assert check.ok, check.steps
    assert [s["step"] for s in check.steps] == ["load", "disable", "disable", "rollback"]
    assert be.served() == {"base-model"}


def test_dry_run_loads_the_pinned_previous(fake_vllm, adapter_dir):
    be = VllmBackend(fake_vllm.url, "base-model")
    check = dry_run_unhooks(be, name="claim-v2", path=adapter_dir("a2"), previous=("claim-v1", adapter_dir("a1")))
    assert check.ok, check.steps
    assert be.served() == {"base-model", "claim-v1"}


def test_dry_run_fails_on_a_broken_adapter_or_a_dead_server(fake_vllm, tmp_path, adapter_dir):
    be = VllmBackend(fake_vllm.url, "base-model")
    (tmp_path / "empty").mkdir()
    check = dry_run_unhooks(be, name="x", path=tmp_path / "empty", previous=None)
    assert not check.ok and check.steps[-1]["step"] == "backend" and "No adapter" in check.steps[-1]["detail"]
    bad_prev = dry_run_unhooks(be, name="y", path=adapter_dir("a3"), previous=("old", tmp_path / "empty"))
    assert not bad_prev.ok
    dead = dry_run_unhooks(
        VllmBackend("http://127.0.0.1:9", "b", timeout_s=1), name="z", path=adapter_dir("a4"), previous=None
    )
    assert not dead.ok


def test_dry_run_fails_when_the_base_is_not_served(fake_vllm, adapter_dir):
    be = VllmBackend(fake_vllm.url, "some-other-base")
    check = dry_run_unhooks(be, name="c", path=adapter_dir("a5"), previous=None)
    assert not check.ok
    assert {"step": "disable", "ok": False, "detail": "base model not served"} in check.steps

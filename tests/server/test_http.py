"""The HTTP face end to end: a real uvicorn server, the SDK's streamable-HTTP client, bearer tokens.

Hostile cases first: missing, wrong and revoked tokens get 401; one identity cannot touch another's
sandbox (nor its trajectory or job) without a shared team; quotas refuse with the documented error;
a foreign ``Host`` is refused (DNS rebinding); an oversized body is refused before parsing."""

from __future__ import annotations

import httpx2
import pytest
from http_helpers import ACCEPT, INIT, client, running_server

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.identities import IdentityRegistry
from agent_rl_sandbox.tools.store import Store

pytestmark = pytest.mark.anyio
TASK = "claim-before-edit"


def _svc(tmp_path, **overrides) -> Services:
    return Services.build(Settings(home=tmp_path / "home", **overrides))


def _text(res) -> str:
    return res.content[0].text if res.content else ""


async def test_health_needs_no_token_and_says_nothing(tmp_path):
    with running_server(_svc(tmp_path)) as base:
        async with httpx2.AsyncClient() as http:
            r = await http.get(f"{base}/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


async def test_missing_wrong_and_revoked_tokens_get_401(tmp_path):
    svc = _svc(tmp_path)
    reg = IdentityRegistry(svc.store.engine)
    rec, token = reg.add("alice")
    with running_server(svc) as base:
        async with httpx2.AsyncClient() as http:
            none = await http.post(f"{base}/mcp", json=INIT, headers=ACCEPT)
            wrong = await http.post(
                f"{base}/mcp", json=INIT, headers={**ACCEPT, "Authorization": "Bearer ars_" + "x" * 43}
            )
            junk = await http.post(f"{base}/mcp", json=INIT, headers={**ACCEPT, "Authorization": "Basic YTpi"})
            ok = await http.post(f"{base}/mcp", json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
            async with client(base, token) as c:  # the real client works with the token
                assert not (await c.call_tool("list_tasks", {})).is_error
            reg.revoke("alice")
            revoked = await http.post(f"{base}/mcp", json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
    assert [r.status_code for r in (none, wrong, junk, revoked)] == [401, 401, 401, 401]
    assert ok.status_code == 200
    assert token not in revoked.text and "alice" not in revoked.text


async def test_another_identitys_sandbox_and_trajectory_are_refused(tmp_path):
    svc = _svc(tmp_path)
    reg = IdentityRegistry(svc.store.engine)
    a, tok_a = reg.add("alice")
    _, tok_b = reg.add("bob")
    with running_server(svc) as base:
        async with client(base, tok_a) as ca, client(base, tok_b) as cb:
            out = (await ca.call_tool("sandbox_reset", {"task_id": TASK})).structured_content
            sid, session = out["sandbox_id"], out["session_id"]
            before = svc.store.trajectories.get(session).step_count
            for tool, args in [
                ("sandbox_exec", {"sandbox_id": sid, "command": "ls"}),
                ("sandbox_read_file", {"sandbox_id": sid, "path": "README.md"}),
                ("sandbox_write_file", {"sandbox_id": sid, "path": "x.txt", "content": "b was here"}),
                ("sandbox_state", {"sandbox_id": sid}),
                ("sandbox_reset", {"task_id": TASK, "sandbox_id": sid}),
                ("sandbox_finish", {"sandbox_id": sid, "message": "done"}),
            ]:
                res = await cb.call_tool(tool, args)
                assert res.is_error, tool
                assert f"sandbox {sid} is not yours" in _text(res), (tool, _text(res))
            traj = (await cb.call_tool("trajectory_start", {"agent_name": "bob"})).structured_content
            res = await ca.call_tool(
                "trajectory_log_step", {"session_id": traj["trajectory"]["session_id"], "step": {"message": "x"}}
            )
            assert res.is_error and "not yours" in _text(res)
            # alice's own sandbox still works, and bob's refusals left nothing in her trajectory
            assert not (await ca.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "ls"})).is_error
    traj = svc.store.trajectories.get(session)
    assert traj.step_count == before + 1
    assert svc.store.sandboxes.get(sid).owner == a.identity_id


async def test_team_scope_lets_team_mates_act_and_nobody_else(tmp_path):
    svc = _svc(tmp_path)
    reg = IdentityRegistry(svc.store.engine)
    _, tok_a = reg.add("alice", teams=["red"])
    _, tok_c = reg.add("carol", teams=["red", "blue"])
    _, tok_d = reg.add("dave", teams=["blue"])
    with running_server(svc) as base:
        async with client(base, tok_a) as ca, client(base, tok_c) as cc, client(base, tok_d) as cd:
            sid = (await ca.call_tool("sandbox_reset", {"task_id": TASK})).structured_content["sandbox_id"]
            assert not (await cc.call_tool("sandbox_state", {"sandbox_id": sid})).is_error
            res = await cd.call_tool("sandbox_state", {"sandbox_id": sid})
            assert res.is_error and "not yours" in _text(res)


async def test_another_identitys_job_cannot_be_cancelled(tmp_path):
    svc = _svc(tmp_path)
    reg = IdentityRegistry(svc.store.engine)
    a, tok_a = reg.add("alice")
    _, tok_b = reg.add("bob")
    job = svc.jobs.repo.add(
        requester=a.identity_id, spec={}, spec_hash="0" * 64, expires_at="2999-01-01T00:00:00.000000Z",
        trainer="sft", behaviour="claim-before-edit",
    )  # fmt: skip
    with running_server(svc) as base:
        async with client(base, tok_a) as ca, client(base, tok_b) as cb:
            res = await cb.call_tool("training_cancel", {"job_id": job.job_id, "reason": "not mine"})
            assert res.is_error
            mine = await ca.call_tool("training_status", {"job_id": job.job_id})
            assert not mine.is_error and mine.structured_content["job"]["state"] == "awaiting_approval"
            assert not (await ca.call_tool("training_cancel", {"job_id": job.job_id, "reason": "mine"})).is_error


async def test_open_sandbox_quota_gets_the_documented_error(tmp_path):
    svc = _svc(tmp_path, quota_open_sandboxes=1)
    reg = IdentityRegistry(svc.store.engine)
    _, tok = reg.add("alice")
    _, other = reg.add("bob")
    with running_server(svc) as base:
        async with client(base, tok) as c, client(base, other) as cb:
            first = await c.call_tool("sandbox_reset", {"task_id": TASK})
            assert not first.is_error
            sid = first.structured_content["sandbox_id"]
            res = await c.call_tool("sandbox_reset", {"task_id": TASK})
            assert res.is_error
            text = _text(res)
            assert "quota exceeded: open_sandboxes is 1 for identity idn_" in text and "(1 open)" in text
            assert "Next step: retry after sandbox_finish" in text
            # reusing the open sandbox is allowed; another identity has its own quota
            assert not (await c.call_tool("sandbox_reset", {"task_id": TASK, "sandbox_id": sid})).is_error
            assert not (await cb.call_tool("sandbox_reset", {"task_id": TASK})).is_error
            assert not (await c.call_tool("sandbox_finish", {"sandbox_id": sid, "message": "done"})).is_error
            assert not (await c.call_tool("sandbox_reset", {"task_id": TASK})).is_error


async def test_step_rate_quota_says_when_to_retry(tmp_path):
    svc = _svc(tmp_path, quota_steps_per_minute=3)
    reg = IdentityRegistry(svc.store.engine)
    _, tok = reg.add("alice")
    with running_server(svc) as base:
        async with client(base, tok) as c:
            sid = (await c.call_tool("trajectory_start", {"agent_name": "a"})).structured_content["trajectory"][
                "session_id"
            ]
            ok = await c.call_tool(
                "trajectory_log_step", {"session_id": sid, "steps": [{"message": str(i)} for i in range(3)]}
            )
            assert not ok.is_error
            res = await c.call_tool("trajectory_log_step", {"session_id": sid, "step": {"message": "one more"}})
    assert res.is_error
    text = _text(res)
    assert "quota exceeded: steps_per_minute is 3 for identity idn_" in text and "Next step: retry in " in text
    assert svc.store.trajectories.get(sid).step_count == 3  # the refused step was not stored


async def test_dns_rebinding_refuses_a_foreign_host_and_accepts_a_configured_one(tmp_path):
    svc = _svc(tmp_path, http_allowed_hosts=("mcp.example.org",), http_allowed_origins=("https://mcp.example.org",))
    _, tok = IdentityRegistry(svc.store.engine).add("alice")
    auth = {**ACCEPT, "Authorization": f"Bearer {tok}"}
    with running_server(svc) as base:
        async with httpx2.AsyncClient() as http:
            foreign = await http.post(f"{base}/mcp", json=INIT, headers={**auth, "Host": "evil.example"})
            rebound = await http.post(f"{base}/mcp", json=INIT, headers={**auth, "Origin": "http://evil.example"})
            proxied = await http.post(
                f"{base}/mcp",
                json=INIT,
                headers={**auth, "Host": "mcp.example.org", "Origin": "https://mcp.example.org"},
            )
    assert foreign.status_code == 421
    assert rebound.status_code == 403
    assert proxied.status_code == 200


async def test_an_oversized_body_is_refused_before_parsing(tmp_path):
    svc = _svc(tmp_path, http_max_request_bytes=4096)
    _, tok = IdentityRegistry(svc.store.engine).add("alice")
    with running_server(svc) as base:
        async with httpx2.AsyncClient() as http:
            r = await http.post(
                f"{base}/mcp", content=b"{" + b" " * 10_000 + b"}", headers={**ACCEPT, "Authorization": f"Bearer {tok}"}
            )
    assert r.status_code == 413


async def test_every_action_is_attributed_to_the_identity(tmp_path):
    svc = _svc(tmp_path)
    a, tok = IdentityRegistry(svc.store.engine).add("alice")
    with running_server(svc) as base:
        async with client(base, tok) as c:
            out = (await c.call_tool("sandbox_reset", {"task_id": TASK})).structured_content
            await c.call_tool("sandbox_exec", {"sandbox_id": out["sandbox_id"], "command": "ls"})
            sid = (await c.call_tool("trajectory_start", {"agent_name": "a"})).structured_content["trajectory"][
                "session_id"
            ]
            await c.call_tool("trajectory_log_step", {"session_id": sid, "step": {"message": "hi"}})
    store = Store(svc.settings.db_url)
    try:
        assert store.sandboxes.get(out["sandbox_id"]).owner == a.identity_id
        assert store.trajectories.owners([out["session_id"], sid]) == {
            out["session_id"]: a.identity_id,
            sid: a.identity_id,
        }
    finally:
        store.close()


async def test_a_kill_switch_pull_is_attributed_to_the_identity(tmp_path):
    from sqlalchemy import insert

    from agent_rl_sandbox.tools.store._common import utcnow
    from agent_rl_sandbox.tools.store._schema import adapters

    svc = _svc(tmp_path, vllm_base_model="base-model")
    a, tok = IdentityRegistry(svc.store.engine).add("alice")
    job = svc.jobs.repo.add(
        requester="operator", spec={}, spec_hash="0" * 64, expires_at="2999-01-01T00:00:00.000000Z",
        trainer="sft", behaviour="claim-before-edit", actor="human",
    )  # fmt: skip
    now = utcnow()
    with svc.store.engine.begin() as conn:  # a deployed adapter, as a human's deploy leaves it
        conn.execute(
            insert(adapters).values(
                adapter_id="adp_1",
                behaviour="claim-before-edit",
                base_model="base-model",
                job_id=job.job_id,
                spec_hash="0" * 64,
                path=str(tmp_path),
                content_hash="0" * 64,
                state="deployed",
                served_name="claim-before-edit-adp_1",
                created_at=now,
                updated_at=now,
            )  # fmt: skip
        )
    with running_server(svc) as base:
        async with client(base, tok) as c:
            res = await c.call_tool("adapter_disable", {"behaviour": "claim-before-edit", "reason": "looks wrong"})
    assert not res.is_error, _text(res)
    reg = svc.adapters
    last = reg.events("adp_1")[-1]
    assert (last.actor, last.who, last.to_state, last.reason) == ("agent", a.identity_id, "disabled", "looks wrong")

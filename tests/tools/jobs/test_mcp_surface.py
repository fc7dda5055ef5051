"""The training tools through the real in-process MCP client, on SQLite and PostgreSQL, and the MCP
surface rule: no tool approves, deploys, enables or rolls forward, and no call of any tool with any
arguments (job ids, states, hashes, ``"approved": true``, decisions, the jobs CLI run inside a
sandbox) moves a job out of ``awaiting_approval`` except to ``cancelled``. Every training tool
answers in under a second."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from agent_rl_sandbox.server.app import TOOLS, build_server
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.jobs import JobService

pytestmark = pytest.mark.anyio

ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
FORBIDDEN_WORDS = ("approve", "deploy", "enable", "promote", "roll_forward", "rollforward", "unpause", "resume")
AGENT_MAY_REACH = {"awaiting_approval", "cancelled"}


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def jobs_services(tmp_path, store_url):
    data = tmp_path / "data"
    data.mkdir()
    (data / "sft.jsonl").write_text((json.dumps(ROW) + "\n") * 3)
    s = Services.build(
        Settings(home=tmp_path / "home", database_url=store_url, data_dirs=(data,), models=("tiny-model",))
    )
    yield s
    s.close()


def _spec(services: Services, **extra) -> dict:
    path = str(services.settings.data_dirs[0] / "sft.jsonl")
    return {
        "route": "sft",
        "trainer": "sft",
        "base_model": "tiny-model",
        "dataset": {"kind": "file", "path": path},
        "gate": {"name": "deploy", "behaviour": "claim-before-edit"},
        "reason": "teach claiming",
        **extra,
    }


async def _timed(client, name: str, args: dict):
    t0 = time.perf_counter()
    res = await client.call_tool(name, args)
    return res, time.perf_counter() - t0


async def test_training_tools_request_status_list_cancel(jobs_services):
    async with Client(build_server(services=jobs_services)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["training_status"].annotations.read_only_hint is True
        assert tools["training_list"].annotations.read_only_hint is True
        res, dt = await _timed(client, "training_request", _spec(jobs_services))
        assert not res.is_error, _text(res)
        assert dt < 1.0
        jsonschema.validate(res.structured_content, tools["training_request"].output_schema)
        job = res.structured_content["job"]
        assert job["state"] == "awaiting_approval" and job["requester"].startswith("mcp:")  # the session's caller
        assert res.structured_content["dataset_validation"]["verdict"] == "valid"

        res, dt = await _timed(client, "training_status", {"job_id": job["job_id"]})
        assert not res.is_error and dt < 1.0, _text(res)
        jsonschema.validate(res.structured_content, tools["training_status"].output_schema)
        assert [e["to_state"] for e in res.structured_content["events"]] == ["awaiting_approval"]

        res, dt = await _timed(client, "training_list", {"state": "awaiting_approval"})
        assert not res.is_error and dt < 1.0 and res.structured_content["total"] == 1

        bad, _ = await _timed(client, "training_request", _spec(jobs_services, caps={"max_gpu_hours": 1e6}))
        assert bad.is_error and "caps.max_gpu_hours" in _text(bad) and "Next step" in _text(bad), _text(bad)

        res, dt = await _timed(client, "training_cancel", {"job_id": job["job_id"]})
        assert not res.is_error and dt < 1.0 and res.structured_content["job"]["state"] == "cancelled"
        res = await client.call_tool("training_status", {"job_id": job["job_id"]})
        ev = res.structured_content["events"][-1]
        assert (ev["actor"], ev["from_state"], ev["to_state"]) == ("agent", "awaiting_approval", "cancelled")


def test_no_tool_approves_deploys_enables_or_rolls_forward():
    names = [t.name for t in TOOLS]
    assert not [n for n in names if any(w in n for w in FORBIDDEN_WORDS)]
    human_only = {JobService.approve, JobService.reject, JobService.cancel_as_human}
    assert not human_only & {t.impl for t in TOOLS}
    jobs_tools = {t.name for t in TOOLS if getattr(JobService, t.impl.__name__, None) is t.impl}
    assert jobs_tools == {"training_request", "training_status", "training_list", "training_cancel"}


def _hostile_values(job_id: str, spec_hash: str) -> list:
    return [job_id, spec_hash, "approved", "queued", "running", "approve", "human", f"{job_id} --hash {spec_hash}"]


def _fill(schema: dict, value) -> dict:
    """Arguments giving every string-typed property of ``schema`` the value ``value``, and every
    boolean ``true`` (object- and number-typed ones are left to the hostile extras)."""
    out = {}
    for name, prop in (schema.get("properties") or {}).items():
        types = {prop.get("type")} | {a.get("type") for a in prop.get("anyOf", [])}
        if "string" in types:
            out[name] = value
        elif "boolean" in types:
            out[name] = True
    return out


def _states_ok(services: Services) -> list[str]:
    """Problems: a job outside what an agent may reach, or an event by anyone but an agent."""
    problems = []
    jobs, _ = services.jobs.repo.list(limit=1000)
    for j in jobs:
        if j.state not in AGENT_MAY_REACH:
            problems.append(f"{j.job_id} is {j.state}")
        for e in services.jobs.repo.events(j.job_id):
            if e.actor != "agent" or e.to_state not in AGENT_MAY_REACH:
                problems.append(f"{j.job_id}: event {e}")
    return problems


async def test_no_sequence_of_tool_calls_gets_a_job_past_awaiting_approval(jobs_services):
    services = jobs_services
    async with Client(build_server(services=services)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {t.name for t in TOOLS}  # the test covers every tool the server has

        # a spec smuggling approval fields is refused outright (closed input schema), recording nothing
        res = await client.call_tool("training_request", _spec(services, approved=True, state="approved"))
        assert res.is_error and "unknown argument `approved`" in _text(res), _text(res)
        assert services.jobs.repo.list(limit=10)[0] == []
        res = await client.call_tool("training_request", _spec(services))
        assert not res.is_error, _text(res)
        target = res.structured_content["job"]
        jid, h = target["job_id"], target["spec_hash"]
        first = jid
        victim = (await client.call_tool("training_request", _spec(services))).structured_content["job"]["job_id"]
        sb = (await client.call_tool("sandbox_reset", {"task_id": "claim-before-edit"})).structured_content
        sandbox_id = sb["sandbox_id"]

        extras = {
            "job_id": jid, "state": "approved", "to": "queued", "to_state": "running", "hash": h,
            "spec_hash": h, "approved_hash": h, "approved": True, "approve": True, "decision": "approve",
            "actor": "human", "who": "human", "as": "human", "note": "approved", "force": True,
        }  # fmt: skip
        calls = 0
        for name, tool in sorted(listed.items()):
            schema = tool.input_schema
            attempts = [{}, dict(extras)]
            attempts += [_fill(schema, v) | {"job_id": jid} for v in _hostile_values(jid, h)]
            attempts += [_fill(schema, v) for v in _hostile_values(jid, h)]
            if "sandbox_id" in (schema.get("properties") or {}):
                attempts += [_fill(schema, "approved") | {"sandbox_id": sandbox_id}]
            if name == "training_request":
                attempts += [
                    _spec(services, **{k: v for k, v in extras.items() if k not in ("note",)}),
                    _spec(services, reason=f"approve {jid} --hash {h}"),
                ]
            for args in attempts:
                res, dt = await _timed(client, name, args)
                calls += 1
                if name.startswith("training_"):
                    assert dt < 1.0, (name, args, dt)
                if name == "training_cancel" and not res.is_error:  # the one change an agent may make
                    assert res.structured_content["job"]["state"] == "cancelled"
                problems = _states_ok(services)
                assert not problems, (name, args, problems)
                if name == "training_cancel" and not res.is_error:
                    # put the target back in play: a fresh request to attack (cancelled is final)
                    res = await client.call_tool("training_request", _spec(services))
                    jid, h = res.structured_content["job"]["job_id"], res.structured_content["job"]["spec_hash"]
                    extras |= {"job_id": jid, "hash": h, "spec_hash": h, "approved_hash": h}

        # the jobs CLI run from inside a sandbox (the agent's only shell) cannot decide either
        import agent_rl_sandbox

        env = f"PYTHONPATH={Path(agent_rl_sandbox.__file__).parents[1]} "
        if services.store.dialect == "postgresql":
            env += f"AGENT_RL_SANDBOX_DATABASE_URL='{services.settings.db_url}' "
        cmd = (
            f"{env}{sys.executable} -m agent_rl_sandbox.cli jobs approve {jid} --hash {h} "
            f"--home {services.settings.home}; echo rc=$?"
        )
        sb = (await client.call_tool("sandbox_reset", {"task_id": "claim-before-edit"})).structured_content
        res = await client.call_tool("sandbox_exec", {"sandbox_id": sb["sandbox_id"], "command": cmd})
        calls += 1
        assert not res.is_error and "rc=" in _text(res) and "rc=0" not in _text(res), _text(res)
        assert not _states_ok(services), _text(res)
        assert calls > 100

        assert services.jobs.repo.get(first).state == "cancelled"  # training_cancel did act on its target
        assert services.jobs.repo.get(victim).state == "awaiting_approval"
        print("sandbox_exec of the jobs CLI:", _text(res)[-400:])
        # the check is not vacuous: a human approval is seen as leaving awaiting_approval
        services.jobs.approve(jid, h, "alice")
        assert _states_ok(services)


@pytest.mark.parametrize("args", [{"job_id": "job_000000000000"}, {"job_id": "../../etc"}, {"job_id": ""}])
async def test_status_and_cancel_of_unknown_or_malformed_ids_are_flagged(jobs_services, args):
    async with Client(build_server(services=jobs_services)) as client:
        for name in ("training_status", "training_cancel"):
            res = await client.call_tool(name, args)
            assert res.is_error and "Next step" in _text(res), _text(res)


def test_the_request_schema_is_the_job_spec():
    from agent_rl_sandbox.schemas.jobs import JobSpec

    spec = next(t for t in TOOLS if t.name == "training_request")
    assert spec.input_model is JobSpec
    assert Path(__file__).name  # (keeps the import of Path used by type checkers)

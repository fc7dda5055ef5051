"""The trajectory tools through real MCP clients: in process (``mcp.Client(server)``) and over stdio
(``agent-rl-sandbox serve`` as a subprocess). Provenance is the server's decision, not the client's."""

from __future__ import annotations

import json
import os
import sys

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from agent_rl_sandbox.server.app import build_server

pytestmark = pytest.mark.anyio


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


@pytest.fixture
def server(services):
    return build_server(services=services)


async def _call(client, name: str, args: dict, schemas: dict):
    res = await client.call_tool(name, args)
    if not res.is_error:
        jsonschema.validate(res.structured_content, schemas[name])
    return res


async def test_start_log_finish_list_get_export(server, services):
    async with Client(server) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        started = await _call(
            client,
            "trajectory_start",
            {
                "agent_name": "mcp-agent",
                "task_id": "claim-before-edit",
                "external_id": "run-1",
            },
            schemas,
        )
        assert not started.is_error, _text(started)
        traj = started.structured_content["trajectory"]
        sid = traj["session_id"]
        assert traj["split"] == "train" and traj["behaviour"] and traj["origin"] == "mcp"
        # A retried start with the same external id returns the same trajectory.
        again = await _call(client, "trajectory_start", {"agent_name": "mcp-agent", "external_id": "run-1"}, schemas)
        assert (
            again.structured_content["trajectory"]["session_id"] == sid and again.structured_content["created"] is False
        )

        step = {
            "message": "Reading the file with my own tool.",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "read", "arguments": {"path": "a.py"}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "token: ghp_" + "Z" * 36}]},
            "client_step_id": "s1",
        }
        logged = await _call(client, "trajectory_log_step", {"session_id": sid, "step": step}, schemas)
        assert not logged.is_error, _text(logged)
        out = logged.structured_content
        assert out["steps"] == [{"step_id": 1, "client_step_id": "s1", "created": True}]
        assert out["redactions"] == {"github-token": 1}
        retry = await _call(
            client,
            "trajectory_log_step",
            {"session_id": sid, "steps": [step, {"message": "next", "client_step_id": "s2"}]},
            schemas,
        )
        assert [s["created"] for s in retry.structured_content["steps"]] == [False, True]
        assert retry.structured_content["step_count"] == 2

        got = await _call(client, "trajectory_get", {"session_id": sid}, schemas)
        steps = got.structured_content["steps"]
        assert [s["provenance"] for s in steps] == ["agent", "agent"]
        assert "ghp_" not in json.dumps(steps)

        done = await _call(client, "trajectory_finish", {"session_id": sid, "final_message": "done"}, schemas)
        assert done.structured_content["trajectory"]["status"] == "finished"
        assert done.structured_content["trajectory"]["reward"] is None  # finishing never sets a reward
        late = await client.call_tool("trajectory_log_step", {"session_id": sid, "step": {"message": "late"}})
        assert late.is_error and "immutable" in _text(late) and "Next step" in _text(late)

        listed = await _call(client, "trajectory_list", {"agent_name": "mcp-agent", "outcome": "unscored"}, schemas)
        assert [t["session_id"] for t in listed.structured_content["trajectories"]] == [sid]
        assert listed.structured_content["next_offset"] is None

        # a self-logged trajectory is exported only when asked for (and counted as self-reported)
        refused = await client.call_tool("trajectory_export", {"format": "atif"})
        assert refused.is_error and "skipped_self_reported=1" in _text(refused)
        exported = await _call(client, "trajectory_export", {"format": "atif", "include_self_reported": True}, schemas)
        assert not exported.is_error, _text(exported)
        ex = exported.structured_content
        assert ex["by_trust"] == {"self_reported": 1}
        assert ex["rows"] == 1 and os.path.exists(ex["data_path"]) and os.path.exists(ex["manifest_path"])
        assert ex["valid"] is True and ex["validation_errors"] == []
        assert ex["data_path"].startswith(str(services.settings.home))
        empty = await client.call_tool("trajectory_export", {"format": "sft"})
        assert empty.is_error and "nothing to export" in _text(empty)
        held = await client.call_tool("trajectory_export", {"format": "sft", "include_heldout": True})
        assert held.is_error and "training format" in _text(held)


async def test_clients_cannot_claim_server_or_hook_provenance(server, services):
    async with Client(server) as client:
        sid = (await client.call_tool("trajectory_start", {"agent_name": "sneaky"})).structured_content["trajectory"][
            "session_id"
        ]
        for claimed in ("server", "hook"):
            res = await client.call_tool(
                "trajectory_log_step",
                {"session_id": sid, "step": {"message": "I ran the tests", "provenance": claimed}},
            )
            assert res.is_error and "provenance" in _text(res)
        ok = await client.call_tool(
            "trajectory_log_step", {"session_id": sid, "step": {"message": "self-report", "provenance": "agent"}}
        )
        assert not ok.is_error
        bad_pair = await client.call_tool(
            "trajectory_log_step",
            {
                "session_id": sid,
                "step": {
                    "tool_calls": [{"tool_call_id": "a", "function_name": "f"}],
                    "observation": {"results": [{"source_call_id": "zzz", "content": "?"}]},
                },
            },
        )
        assert bad_pair.is_error and "not a tool call of this step" in _text(bad_pair)
        both = await client.call_tool(
            "trajectory_log_step", {"session_id": sid, "step": {"message": "a"}, "steps": [{"message": "b"}]}
        )
        assert both.is_error and "exactly one of step or steps" in _text(both)
    assert [s.provenance for s in services.store.trajectories.get(sid).steps] == ["agent"]


async def test_sandbox_trajectories_close_only_through_sandbox_finish(server, services):
    async with Client(server) as client:
        reset = (await client.call_tool("sandbox_reset", {"task_id": "claim-before-edit"})).structured_content
        res = await client.call_tool("trajectory_finish", {"session_id": reset["session_id"]})
        assert res.is_error and "sandbox_finish" in _text(res)
        listed = (await client.call_tool("trajectory_list", {"origin": "sandbox"})).structured_content
        assert [t["session_id"] for t in listed["trajectories"]] == [reset["session_id"]]


async def test_over_stdio(tmp_path):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")}
    env.update(AGENT_RL_SANDBOX_HOME=str(tmp_path / "home"), AGENT_RL_SANDBOX_LOG_LEVEL="WARNING", HF_HUB_OFFLINE="1")
    params = StdioServerParameters(command=sys.executable, args=["-m", "agent_rl_sandbox.cli", "serve"], env=env)
    async with Client(params, read_timeout_seconds=60) as client:
        started = await client.call_tool("trajectory_start", {"agent_name": "stdio-agent"})
        sid = started.structured_content["trajectory"]["session_id"]
        steps = [{"message": f"step {i}", "client_step_id": f"k{i}"} for i in range(20)]
        logged = await client.call_tool("trajectory_log_step", {"session_id": sid, "steps": steps})
        assert logged.structured_content["step_count"] == 20
        again = await client.call_tool("trajectory_log_step", {"session_id": sid, "steps": steps})
        assert not any(s["created"] for s in again.structured_content["steps"])
        page = await client.call_tool("trajectory_get", {"session_id": sid, "offset": 15, "limit": 10})
        assert [s["step_id"] for s in page.structured_content["steps"]] == [16, 17, 18, 19, 20]
        listed = await client.call_tool("trajectory_list", {"agent_name": "stdio-agent"})
        assert listed.structured_content["total"] == 1


async def test_a_lone_surrogate_in_a_logged_step_is_a_clear_error_naming_where(server, services):
    """``"\\ud800"`` is a legal Python string and JSON can escape it, but no UTF-8 text holds it: the tool
    refuses the step, naming its field (not an internal ``UnicodeEncodeError``), for the direct path on
    the event loop and for a batch, and writes nothing. (A typed text
    field, a step's message or an agent name, is refused by the SDK's own validation, naming it; the MCP
    client cannot send one in a key.)"""
    async with Client(server) as client:
        sid = (await client.call_tool("trajectory_start", {"agent_name": "a"})).structured_content["trajectory"][
            "session_id"
        ]
        for args, where in [
            ({"step": {"message": "half \ud800 a pair"}}, "step.message"),  # typed text: the SDK's validation
            ({"step": {"message": "ok", "extra": {"note": ["x", "\udc00"]}}}, "step 1 is malformed at extra.note[1]"),
            (
                {
                    "steps": [
                        {"message": "fine"},
                        {
                            "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": {"k": "\ud800"}}],
                        },
                    ]
                },
                "step 2 is malformed at tool_calls[0].arguments.k",
            ),
        ]:
            res = await client.call_tool("trajectory_log_step", {"session_id": sid, **args})
            assert res.is_error, _text(res)
            assert where in _text(res), _text(res)
            assert "lone surrogate" in _text(res) or "unable to parse raw data as a unicode string" in _text(res)
            assert "UnicodeEncodeError" not in _text(res)
        bad_start = await client.call_tool("trajectory_start", {"agent_name": "agent \ud800"})
        assert bad_start.is_error and "agent_name" in _text(bad_start) and "unicode" in _text(bad_start)
        ok = await client.call_tool("trajectory_log_step", {"session_id": sid, "step": {"message": "fine"}})
        assert not ok.is_error and ok.structured_content["step_count"] == 1, _text(ok)
    assert [s.message for s in services.store.trajectories.get(sid).steps] == ["fine"]

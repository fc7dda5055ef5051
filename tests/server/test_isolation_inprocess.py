"""Issue 10 §4 through real MCP clients: two sessions on one server (one store) cannot reach each
other's sandboxes, trajectories or held-out answers, whichever protocol era the client speaks."""

from __future__ import annotations

import pytest
from mcp import Client

from agent_rl_sandbox.server.app import TOOLS, build_server, takes_caller
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR

pytestmark = pytest.mark.anyio

TASK = "claim-before-edit"
HELDOUT = "claim-before-edit/heldout-1"


@pytest.fixture
def server(services):
    return build_server(services=services)


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


def test_every_tool_naming_a_sandbox_or_trajectory_acts_for_its_session():
    """A tool that names a sandbox or a trajectory (or creates, lists or exports them) must receive
    the session's caller; only these tools do without one."""
    unscoped = {t.name for t in TOOLS if not takes_caller(t.impl)}
    # task lists, data validation, route recommendations (store-wide counts), and the adapter
    # registry, which is shared by every session and read-only here; eval_gate aggregates the caller's own
    assert unscoped == {"list_tasks", "dataset_validate", "route_recommend", "adapter_list"}
    for t in TOOLS:
        fields = set(t.input_model.model_fields)
        if fields & {"sandbox_id", "session_id"}:
            assert takes_caller(t.impl), t.name


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_second_session_cannot_reach_the_first_ones_sandbox(server, services, mode):
    async with Client(server, mode=mode) as alice, Client(server, mode=mode) as mallory:
        reset = (await alice.call_tool("sandbox_reset", {"task_id": TASK, "agent_name": "alice"})).structured_content
        sid, session = reset["sandbox_id"], reset["session_id"]
        steps_before = services.store.trajectories.summary(session).step_count

        listed = (await mallory.call_tool("trajectory_list", {})).structured_content
        assert sid not in str(listed) and session in str(listed)  # listed, but never with its sandbox id
        got = (await mallory.call_tool("trajectory_get", {"session_id": session})).structured_content
        assert got["trajectory"]["sandbox_id"] is None and sid not in str(got)

        attacks = [
            ("sandbox_exec", {"sandbox_id": sid, "command": "rm -rf shopcart"}),
            ("sandbox_read_file", {"sandbox_id": sid, "path": "shopcart/pricing.py"}),
            ("sandbox_read_output", {"sandbox_id": sid, "step_id": 1}),
            ("sandbox_write_file", {"sandbox_id": sid, "path": "shopcart/pricing.py", "content": "x"}),
            ("sandbox_claim", {"sandbox_id": sid, "paths": ["shopcart"]}),
            ("sandbox_state", {"sandbox_id": sid}),
            ("sandbox_finish", {"sandbox_id": sid, "message": "done"}),
            ("sandbox_reset", {"task_id": TASK, "sandbox_id": sid}),
            ("trajectory_log_step", {"session_id": session, "step": {"source": "agent", "message": "pass"}}),
            ("trajectory_finish", {"session_id": session}),
        ]
        for tool, args in attacks:
            res = await mallory.call_tool(tool, args)
            assert res.is_error, tool
            assert "is not yours" in _text(res) and "Next step:" in _text(res), (tool, _text(res))

        assert services.store.trajectories.summary(session).step_count == steps_before
        assert services.store.sandboxes.get(sid).status == "open"
        own = await alice.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "test -f shopcart/pricing.py"})
        assert not own.is_error and own.structured_content["exit_code"] == 0


async def test_heldout_answers_do_not_reach_another_session(server):
    solution = (BUILTIN_TASKS_DIR / HELDOUT / "solution" / "files" / "slug.py").read_text()
    async with Client(server) as alice, Client(server) as mallory:
        reset = (await alice.call_tool("sandbox_reset", {"task_id": HELDOUT, "agent_name": "alice"})).structured_content
        sid = reset["sandbox_id"]
        await alice.call_tool("sandbox_claim", {"sandbox_id": sid, "paths": ["textutils/slug.py"]})
        await alice.call_tool(
            "sandbox_write_file", {"sandbox_id": sid, "path": "textutils/slug.py", "content": solution}
        )
        await alice.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "python -m pytest -q"})
        done = await alice.call_tool(
            "sandbox_finish", {"sandbox_id": sid, "message": "Ran `python -m pytest -q`: 2 passed."}
        )
        assert done.structured_content["passed"] is True
        assert (
            "test_slugify" not in _text(done)
            and "hidden checks passed (exit 0)" in done.structured_content["verifier_output"]
        )

        listed = (await mallory.call_tool("trajectory_list", {"task_id": HELDOUT})).structured_content
        assert listed["total"] == 0 and listed["trajectories"] == []
        for tool in ("trajectory_get", "eval_score"):
            res = await mallory.call_tool(tool, {"session_id": reset["session_id"]})
            assert res.is_error and "held-out trajectory" in _text(res) and "def slugify" not in _text(res), tool
        exported = await mallory.call_tool("trajectory_export", {"format": "atif", "include_heldout": True})
        assert exported.is_error and "operator only" in _text(exported)

        mine = await alice.call_tool("trajectory_get", {"session_id": reset["session_id"], "limit": 200})
        assert not mine.is_error and "def slugify" in str(mine.structured_content)

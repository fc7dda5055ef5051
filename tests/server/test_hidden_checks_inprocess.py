"""Red-team regressions through real MCP clients (two sessions = two callers on one server): what an
agent sees of the hidden checks, on every split, and what it learns of another agent's trajectories."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server
from agent_rl_sandbox.tools.sandbox._verify import operator_report_text

pytestmark = pytest.mark.anyio

TRAIN = "claim-before-edit"
MARKERS = ("[case]", "FAIL [", "PASS [", "got ", "apply_discount(")
"""What a hidden check's line carries (its kind, name with arguments, got/expected): none of it may
reach an agent. ``claim-before-edit``'s cases are ``apply_discount(...)`` calls."""


@pytest.fixture
def server(services):
    return build_server(services=services)


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content) + json.dumps(res.structured_content or {})


def _leaks(text: str) -> list[str]:
    return [m for m in MARKERS if m in text]


async def test_finishing_a_train_task_unfixed_reveals_no_hidden_case(server, services):
    """The attack: sandbox_reset then sandbox_finish with nothing done listed every hidden case with
    its expected value, enough to write a lookup table and score 1.0 with the bug left in. Now the
    finisher, and any other agent reading the trajectory, gets the verdict and counts only."""
    async with Client(server) as mallory, Client(server) as eve:
        reset = (await mallory.call_tool("sandbox_reset", {"task_id": TRAIN, "agent_name": "m"})).structured_content
        done = await mallory.call_tool("sandbox_finish", {"sandbox_id": reset["sandbox_id"], "message": "x"})
        assert not done.is_error and done.structured_content["passed"] is False
        out = done.structured_content["verifier_output"]
        assert out.startswith("hidden checks failed (exit 1): ") and " of " in out and "withheld" in out, out
        assert _leaks(_text(done)) == [], _text(done)
        session = reset["session_id"]
        for who in (mallory, eve):  # the owner and another agent (train trajectories are readable)
            for tool, args in (
                ("trajectory_get", {"session_id": session, "limit": 200}),
                ("eval_score", {"session_id": session}),
                ("trajectory_list", {"task_id": TRAIN}),
                ("trajectory_export", {"format": "atif"}),
                ("trajectory_export", {"format": "sft", "min_reward": 0}),
            ):
                res = await who.call_tool(tool, args)
                shown = _text(res)
                path = (res.structured_content or {}).get("path")
                if path:
                    shown += open(path).read()
                assert _leaks(shown) == [], (tool, shown[:2000])
    # the operator's report keeps every case with its expected value
    full = operator_report_text(services.settings.reports_dir, session) or ""
    assert "FAIL [case] apply_discount(" in full and "expected" in full, full

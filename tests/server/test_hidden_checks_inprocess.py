"""Red-team regressions through real MCP clients (two sessions = two callers on one server): what an
agent sees of the hidden checks, on every split, and what it learns of another agent's trajectories."""

from __future__ import annotations

import json
import re

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
    finisher, and any other agent reading the trajectory, gets the verdict only (no pass count either:
    that is an oracle an agent can climb one hard-coded case at a time)."""
    async with Client(server) as mallory, Client(server) as eve:
        reset = (await mallory.call_tool("sandbox_reset", {"task_id": TRAIN, "agent_name": "m"})).structured_content
        done = await mallory.call_tool("sandbox_finish", {"sandbox_id": reset["sandbox_id"], "message": "x"})
        assert not done.is_error and done.structured_content["passed"] is False
        out = done.structured_content["verifier_output"]
        assert out.startswith("hidden checks failed (exit 1) [train task: ") and "withheld" in out, out
        assert not re.search(r"\d+ (of \d+ )?(passed|failed)", _text(done)), _text(done)
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


HELDOUT = "claim-before-edit/heldout-1"


async def _finished_heldout(alice) -> str:
    """Alice's finished (unfixed) held-out episode: its session id."""
    reset = (await alice.call_tool("sandbox_reset", {"task_id": HELDOUT, "agent_name": "victim"})).structured_content
    done = await alice.call_tool("sandbox_finish", {"sandbox_id": reset["sandbox_id"], "message": "done"})
    assert not done.is_error
    return reset["session_id"]


async def test_eval_gate_aggregates_only_the_callers_own_trajectories(server):
    """The attack: eval_gate over another agent's held-out session ids (or its task and agent name)
    returned pass/fail, mean reward and criteria counts while trajectory_get refused."""
    async with Client(server) as alice, Client(server) as mallory:
        victim = await _finished_heldout(alice)
        named = await mallory.call_tool("eval_gate", {"session_ids": [victim]})
        assert named.is_error and "is not yours" in _text(named) and "Next step:" in _text(named), _text(named)
        assert "mean_reward" not in _text(named)
        for args in ({"task_id": HELDOUT, "agent_name": "victim"}, {}, {"behaviour": "claim-before-edit"}):
            res = await mallory.call_tool("eval_gate", args)
            assert not res.is_error, _text(res)
            out = res.structured_content
            assert out["stats"]["trajectories"] == 0 and out["by_task"] == [] and victim not in _text(res), args
        own = (await alice.call_tool("eval_gate", {"session_ids": [victim]})).structured_content
        assert own["stats"]["trajectories"] == 1
        assert (await alice.call_tool("eval_gate", {"task_id": HELDOUT})).structured_content["stats"][
            "trajectories"
        ] == 1


async def test_trajectory_start_does_not_reveal_another_agents_trajectory(server):
    """The attack: trajectory_start with another agent's held-out session as parent_session_id
    succeeded, so the id was confirmed to exist. Now it gets the unknown-id error, word for word."""
    async with Client(server) as alice, Client(server) as mallory:
        victim = await _finished_heldout(alice)
        other = await mallory.call_tool("trajectory_start", {"agent_name": "m", "parent_session_id": victim})
        missing = "traj_000000000000"
        none = await mallory.call_tool("trajectory_start", {"agent_name": "m", "parent_session_id": missing})
        assert other.is_error and none.is_error
        assert _text(other).replace(victim, "ID") == _text(none).replace(missing, "ID"), (_text(other), _text(none))
        own = await alice.call_tool("trajectory_start", {"agent_name": "victim", "parent_session_id": victim})
        assert not own.is_error, _text(own)


async def test_dataset_validate_never_reads_the_server_home(tmp_path, monkeypatch):
    """The attack: with the home under the server's working folder, dataset_validate read the store,
    the verifier reports (hidden checks' expected values) and sandbox working copies."""
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings

    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    services = Services.build(Settings(home=home))
    try:
        (home / "reports").mkdir(parents=True, exist_ok=True)
        (home / "reports" / "traj_x.verifier.json").write_text('{"results": []}\n')
        (home / "exports").mkdir(parents=True, exist_ok=True)
        (home / "exports" / "rows.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
        (tmp_path / "mine.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
        async with Client(build_server(services=services)) as mallory:
            for path in (home / "store.db", home / "reports" / "traj_x.verifier.json", home, "home/store.db"):
                res = await mallory.call_tool("dataset_validate", {"path": str(path)})
                assert res.is_error and "server's home folder" in _text(res) and "Next step:" in _text(res), path
            (tmp_path / "link.jsonl").symlink_to(home / "store.db")
            res = await mallory.call_tool("dataset_validate", {"path": "link.jsonl"})
            assert res.is_error and "server's home folder" in _text(res)
            res = await mallory.call_tool(
                "dataset_validate", {"path": "mine.jsonl", "eval_path": str(home / "store.db")}
            )
            assert res.is_error and "server's home folder" in _text(res)
            for ok in (home / "exports" / "rows.jsonl", "mine.jsonl"):
                res = await mallory.call_tool("dataset_validate", {"path": str(ok)})
                assert not res.is_error, (ok, _text(res))
    finally:
        services.close()

"""Scoring from the store (session ids, filters), the read-only `eval_gate` MCP tool, and the
`score store` CLI: real sandbox episodes, real SQLite store, real in-process MCP client."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.schemas.reward import EvalGateInput
from agent_rl_sandbox.server.app import TOOLS, build_server
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals import report_json, score_store
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR

TASK = "claim-before-edit"
FIXED = (BUILTIN_TASKS_DIR / TASK / "solution" / "files" / "pricing.py").read_text()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A store with a good and a careless finished episode, plus one still running."""
    home = tmp_path_factory.mktemp("store") / "home"
    s = Services.build(Settings(home=home))
    sb = s.sandbox
    good = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="good"))
    sb.claim(io.SandboxClaimInput(sandbox_id=good.sandbox_id, paths=["shopcart/pricing.py"]))
    sb.write_file(io.SandboxWriteFileInput(sandbox_id=good.sandbox_id, path="shopcart/pricing.py", content=FIXED))
    sb.exec(io.SandboxExecInput(sandbox_id=good.sandbox_id, command="python -m pytest -q"))
    sb.finish(
        io.SandboxFinishInput(
            sandbox_id=good.sandbox_id, message="Ran python -m pytest -q after the edit: all tests passed."
        )
    )
    bad = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="careless"))
    sb.write_file(io.SandboxWriteFileInput(sandbox_id=bad.sandbox_id, path="shopcart/pricing.py", content=FIXED))
    sb.finish(io.SandboxFinishInput(sandbox_id=bad.sandbox_id, message="Fixed it. All tests pass."))
    running = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="slow"))
    yield {"services": s, "home": home, "good": good.session_id, "bad": bad.session_id, "running": running.session_id}
    s.close()


def test_score_store_by_filters_and_ids(world):
    s = world["services"]
    report = score_store(s, task_id=TASK)
    assert report.kind == "store" and report.source == f"store(task_id={TASK})"
    by = {t.session_id: t for t in report.trajectories}
    assert set(by) == {world["good"], world["bad"]}  # running trajectories are not listed
    assert by[world["good"]].passed and by[world["good"]].reward == 1.0
    assert not by[world["bad"]].passed and by[world["bad"]].self_report_only
    assert by[world["good"]].behaviour == TASK
    assert report.stats.pass_rate == 0.5 and report.stats.groups == 1 and report.stats.zero_variance_groups == 0
    only = score_store(s, agent_name="good")
    assert [t.session_id for t in only.trajectories] == [world["good"]]
    ids = score_store(s, session_ids=[world["good"], world["running"], "traj_nope"])
    assert [t.session_id for t in ids.trajectories] == [world["good"]]
    problems = {p.source: p.message for p in ids.problems}
    assert "still running" in problems[world["running"]] and "unknown trajectory" in problems["traj_nope"]
    assert ids.stats.problems == 2 and ids.stats.unscorable_share > 0


def test_store_report_is_byte_identical(world):
    a = report_json(score_store(world["services"], task_id=TASK))
    b = report_json(score_store(world["services"], task_id=TASK))
    assert a == b and str(world["home"]) not in a


def test_eval_gate_service_is_read_only_and_explains(world):
    s = world["services"]
    out = s.evals.gate(EvalGateInput(gate="default", task_id=TASK))
    assert not out.verdict.passed
    checks = {c.name: c for c in out.verdict.checks}
    assert (
        checks["min_pass_rate"].measured == 0.5
        and "1 more of the 1 failing" in checks["min_pass_rate"].what_would_change
    )
    assert out.gates_available == ["default", "deploy"] and "human" in out.note
    ok = s.evals.gate(EvalGateInput(session_ids=[world["good"]]))
    assert ok.verdict.passed
    with pytest.raises(ActionError, match="unknown gate"):
        s.evals.gate(EvalGateInput(gate="promote-me"))


@pytest.mark.anyio
async def test_eval_gate_over_mcp(world):
    server = build_server(services=world["services"])
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        tool = listed["eval_gate"]
        assert tool.annotations.read_only_hint is True
        res = await client.call_tool("eval_gate", {"gate": "default", "task_id": TASK})
        assert not res.is_error
        verdict = res.structured_content["verdict"]
        assert verdict["passed"] is False and verdict["what_would_change"]
        assert {"name", "threshold", "measured", "status", "what_would_change"} <= set(verdict["checks"][0])
        err = await client.call_tool("eval_gate", {"gate": "nope"})
        assert err.is_error and "Next step" in "".join(getattr(b, "text", "") for b in err.content)
    # nothing an agent can call changes a gate or promotes past it
    for t in TOOLS:
        if t.impl.__qualname__.startswith("EvalService."):
            assert t.annotations.read_only_hint is True
    words = ("approve", "promote", "deploy", "gate_set", "set_gate", "update_gate", "enable")
    assert not [t.name for t in TOOLS if any(w in t.name for w in words)]


def test_cli_scores_the_store_and_gates(world):
    runner = CliRunner()
    home = str(world["home"])
    r = runner.invoke(app, ["score", "store", "--task", TASK, "--gate", "default", "--json", "--home", home])
    assert r.exit_code == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["stats"]["trajectories"] == 2 and doc["gate"]["passed"] is False
    r = runner.invoke(app, ["score", f"store:{world['good']}", "--gate", "default", "--json", "--home", home])
    assert r.exit_code == 0 and json.loads(r.stdout)["gate"]["passed"] is True


def test_cli_store_inputs_that_score_nothing_exit_2(world):
    runner = CliRunner()
    home = str(world["home"])
    r = runner.invoke(app, ["score", "store:traj_nope", "--home", home])
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "unknown trajectory 'traj_nope'" in r.stderr and "trajectories list" in r.stderr and r.stdout == ""
    r = runner.invoke(app, ["score", f"store:{world['good']},traj_nope", "--json", "--home", home])
    assert r.exit_code == 2 and "1 of 2 named trajectories" in r.stderr and r.stdout == ""
    r = runner.invoke(app, ["score", f"store:{world['running']}", "--home", home])
    assert r.exit_code == 2 and "still running" in r.stderr
    r = runner.invoke(app, ["score", "store", "--task", "nope", "--gate", "default", "--home", home])
    assert r.exit_code == 2 and "no finished trajectories match task 'nope'" in r.stderr and "Traceback" not in r.stderr


def test_cli_scores_the_atif_jsonl_that_export_atif_writes(world, tmp_path):
    runner = CliRunner()
    home = str(world["home"])
    r = runner.invoke(app, ["export", "atif", "--out", str(tmp_path / "exports"), "--json", "--home", home])
    assert r.exit_code == 0, r.stdout + r.stderr
    manifest = json.loads(r.stdout)
    data = tmp_path / "exports" / manifest["export_id"] / manifest["files"][0]["path"]
    assert data.name == "trajectories.atif.jsonl" and len(data.read_text().splitlines()) == 2
    r = runner.invoke(app, ["score", str(data), "--json", "--home", home])
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == "atif" and doc["problems"] == []
    by = {t["session_id"]: t for t in doc["trajectories"]}
    assert set(by) == {world["good"], world["bad"]} and {t["task_id"] for t in by.values()} == {TASK}
    assert by[world["bad"]]["self_report_only"] and not by[world["bad"]]["passed"]
    # The export's folder scores too (the manifest is listed as a problem, not fatal).
    r = runner.invoke(app, ["score", str(data.parent), "--json", "--home", home])
    assert r.exit_code == 0 and json.loads(r.stdout)["stats"]["trajectories"] == 2
    # A bad line is a problem naming file and line; the other lines still score.
    lines = data.read_text().splitlines()
    mixed = tmp_path / "mixed.atif.jsonl"
    mixed.write_text(
        "\n".join([lines[0], "{oops", json.dumps({"schema_version": "ATIF-v1.5", "steps": []}), lines[1]]) + "\n"
    )
    r = runner.invoke(app, ["score", str(mixed), "--json", "--home", home])
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["stats"]["trajectories"] == 2
    assert [(p["source"], p["where"]) for p in doc["problems"]] == [
        ("mixed.atif.jsonl:2", "$"),
        ("mixed.atif.jsonl:3", "$.session_id"),
    ]
    # Every line bad: nothing scored is invalid input (exit 2), the message names file and line.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n" + json.dumps({"steps": [], "session_id": "x", "schema_version": "v9"}) + "\n")
    r = runner.invoke(app, ["score", str(bad), "--home", home])
    assert r.exit_code == 2 and r.stdout == ""
    assert "bad.jsonl:1 $: not valid JSON" in r.stderr and "bad.jsonl:2 $.schema_version" in r.stderr

"""``agent-rl-sandbox import`` and ``export``: reports with file and line, exit codes, validated output."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"


def test_import_then_export_through_the_cli(tmp_path):
    runner = CliRunner()
    home = ["--home", str(tmp_path / "home")]
    ok = runner.invoke(app, ["import", str(FIXTURES / "atif/openhands__hello-world.trajectory.json"), *home])
    assert ok.exit_code == 0, ok.output
    assert "1 trajectory, 6 steps" in ok.output and "1 call without result" in ok.output
    bad = runner.invoke(app, ["import", str(FIXTURES / "claude_code/session-7f3c1a52.jsonl"), "--json", *home])
    assert bad.exit_code == 1
    report = json.loads(bad.output)[0]
    assert report["ok"] is False and report["format"] == "claude_code"
    assert {p["line"] for p in report["problems"] if p["severity"] == "error"} == {18}
    out = tmp_path / "out"
    # imported trajectories name no task of this registry: left out unless asked for
    unknown = runner.invoke(app, ["export", "sft", "--any-reward", "--out", str(out), *home])
    assert unknown.exit_code == 1 and "skipped_unknown_task=2" in unknown.output
    exported = runner.invoke(
        app, ["export", "sft", "--any-reward", "--include-unknown-tasks", "--out", str(out), "--json", *home]
    )
    assert exported.exit_code == 0, exported.output
    manifest = json.loads(exported.output)
    assert manifest["rows"] == 2 and (out / manifest["export_id"] / "sft.jsonl").exists()
    assert manifest["filters"]["include_unknown_tasks"] is True
    refused = runner.invoke(app, ["export", "dpo", "--include-heldout", *home])
    assert refused.exit_code == 1


def test_show_prints_the_hidden_checks_for_the_operator(tmp_path):
    """Agents get the verifier's verdict only; the operator's `trajectories show` lists every check
    with its arguments and expected value (from <home>/reports/<session>.verifier.json)."""
    from agent_rl_sandbox.schemas.tools import SandboxFinishInput, SandboxResetInput
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings

    s = Services.build(Settings(home=tmp_path / "home"))
    try:
        r = s.sandbox.reset(SandboxResetInput(task_id="claim-before-edit", agent_name="t"))
        out = s.sandbox.finish(SandboxFinishInput(sandbox_id=r.sandbox_id, message="x"))
    finally:
        s.sandbox.close()
        s.close()
    assert "[case]" not in out.verifier_output
    shown = CliRunner().invoke(app, ["trajectories", "show", r.session_id, "--home", str(tmp_path / "home")])
    assert shown.exit_code == 0, shown.output
    assert "FAIL [case] apply_discount(" in shown.output and "expected" in shown.output, shown.output[-2000:]

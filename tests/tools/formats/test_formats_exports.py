"""Exports cannot launder a verdict (issue 10 §5): signed exports score as the store scores them; edited,
foreign or hand-written files are self-reported and say so; suite exports carry the expectations that give
the store's verdict under a gate. Real sandbox episodes, a real SQLite store, the real CLI."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.datasets import validate_file
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals import score_path, score_store
from agent_rl_sandbox.tools.formats import export_key, verify
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR, discover_tasks
from agent_rl_sandbox.tools.trajectories import ExportOptions

TASK = "claim-before-edit"
FIXED = (BUILTIN_TASKS_DIR / TASK / "solution" / "files" / "pricing.py").read_text()
runner = CliRunner()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A store with one good and one careless finished episode of the same task."""
    home = tmp_path_factory.mktemp("exports") / "home"
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
    store_report = score_store(s, task_id=TASK)
    yield {
        "services": s,
        "home": home,
        "good": good.session_id,
        "bad": bad.session_id,
        "store": {t.session_id: t for t in store_report.trajectories},
    }
    s.close()


def _export(world, fmt: str, out: Path, **filters) -> Path:
    res = world["services"].trajectories.export_to(ExportOptions(format=fmt, **filters), out)
    return res.data_path


def _score(world, path: Path):
    tasks = discover_tasks()[0]
    return score_path(path, tasks=tasks, export_key=export_key(world["home"]))


def test_export_key_is_private_created_once_and_never_exported(world, tmp_path):
    data = _export(world, "atif", tmp_path / "a")
    key_file = world["home"] / "export.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = export_key(world["home"])
    _export(world, "atif", tmp_path / "b")
    assert export_key(world["home"]) == key  # created on first use only
    hex_key = key.hex()
    for f in (tmp_path / "a").rglob("*"):
        if f.is_file():
            assert hex_key not in f.read_text()
    assert all(verify(json.loads(line), key, "atif").verified for line in data.read_text().splitlines())
    key_file.chmod(0o644)
    try:
        with pytest.raises(ActionError, match="readable by other users") as e:
            export_key(world["home"])
        assert "Next step: run `chmod 600" in e.value.agent_text()
    finally:
        key_file.chmod(0o600)


def test_atif_export_round_trip_scores_exactly_as_the_store(world, tmp_path):
    data = _export(world, "atif", tmp_path)
    assert validate_file(data, kind="atif").ok
    report = _score(world, data)
    by = {t.session_id: t for t in report.trajectories}
    assert set(by) == {world["good"], world["bad"]}
    for sid, stored in world["store"].items():
        got = by[sid]
        assert got.trust == "verified_export"
        assert (got.reward, got.passed, got.self_report_only) == (stored.reward, stored.passed, stored.self_report_only)
        assert [(c.id, c.status, c.value) for c in got.criteria] == [(c.id, c.status, c.value) for c in stored.criteria]
    assert by[world["good"]].passed and not by[world["bad"]].passed
    assert report.stats.unscorable_criteria == 0  # the store's verdict, not a file-only rescoring
    note = "ATIF trajectories: all 2 are verified exports of this store (signature checked), so step provenance"
    assert any(w.startswith(note) for w in report.warnings), report.warnings
    assert not any("self-reported" in w or "self-logged" in w for w in report.warnings)


@pytest.mark.parametrize("edit", ["reward", "provenance"])
def test_a_tampered_atif_export_is_self_reported_and_flagged(world, tmp_path, edit):
    data = _export(world, "atif", tmp_path)
    docs = [json.loads(line) for line in data.read_text().splitlines()]
    bad = next(d for d in docs if d["session_id"] == world["bad"])
    if edit == "reward":
        bad["extra"]["store_score"].update(reward=1.0, passed=True, failed_criteria=[], self_report_only=False)
        bad["extra"].update(reward=1.0, passed=True)
    else:
        agent_steps = [s for s in bad["steps"] if s["source"] == "agent"]
        agent_steps[0]["extra"]["provenance"] = "hook"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    report = _score(world, data)
    by = {t.session_id: t for t in report.trajectories}
    t = by[world["bad"]]
    assert t.trust == "self_reported" and not t.passed
    assert t.reward < 1.0
    assert any("does not match its content" in w for w in t.warnings)
    assert any("claim trust they cannot prove" in w and world["bad"] in w for w in report.warnings)
    assert by[world["good"]].trust == "verified_export"  # the untouched line still verifies
    mixed = "ATIF trajectories: 1 of 2 are verified exports of this store (their step provenance counts as recorded)"
    assert any(w.startswith(mixed) and "the other 1 are self-reported" in w for w in report.warnings)


def test_an_export_signed_by_another_home_is_self_reported(world, tmp_path):
    data = _export(world, "atif", tmp_path)
    other = tmp_path / "other-home"
    other.mkdir()
    export_key(other, create=True)
    report = score_path(data, tasks=discover_tasks()[0], export_key=export_key(other))
    assert {t.trust for t in report.trajectories} == {"self_reported"}
    assert all(any("another store's export key" in w for w in t.warnings) for t in report.trajectories)
    assert not any(t.passed for t in report.trajectories)  # server steps and store score both ignored


def _cli_score(world, path: Path, *extra: str):
    return runner.invoke(app, ["score", str(path), "--gate", "default", "--json", "--home", str(world["home"]), *extra])


def test_suite_export_then_gate_gives_the_store_verdict(world, tmp_path):
    data = _export(world, "suite", tmp_path / "all")
    suite = json.loads(data.read_text())
    assert all(t["expectedEvidence"] for t in suite["tasks"])  # not "nothing expected scores 1"
    assert validate_file(data, kind="trajectory_suite").ok  # score and validate agree it is a valid suite
    r = _cli_score(world, data)
    assert r.exit_code == 1, r.stdout + r.stderr  # the careless trajectory fails, as in the store
    doc = json.loads(r.stdout)
    by = {t["session_id"]: t for t in doc["trajectories"]}
    for sid, stored in world["store"].items():
        assert (by[sid]["reward"], by[sid]["passed"], by[sid]["trust"]) == (
            stored.reward,
            stored.passed,
            "verified_export",
        )
    assert doc["gate"]["passed"] is False
    only_good = _export(world, "suite", tmp_path / "good", agent_name="good")
    r = _cli_score(world, only_good)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["summary"]["evalGatePassed"] is True


def test_a_tampered_suite_export_cannot_pass_the_gate(world, tmp_path):
    data = _export(world, "suite", tmp_path)
    suite = json.loads(data.read_text())
    for t in suite["trajectories"]:
        for a in t["artifacts"]:
            if a["kind"] == "store_verdict":
                a["status"] = "passed"  # launder the careless verdict
    data.write_text(json.dumps(suite))
    r = _cli_score(world, data)
    assert r.exit_code == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["evalGatePassed"] is False and doc["stats"]["passed"] == 0
    assert {t["trust"] for t in doc["trajectories"]} == {"self_reported"}
    assert any("self-reported suite" in w and "does not match its content" in w for w in doc["warnings"])
    # Dropping the signature and the expectations too leaves a suite that expects nothing: no gate passes it.
    del suite["exportSignature"]
    for t in suite["tasks"]:
        t.pop("expectedEvidence")
    data.write_text(json.dumps(suite))
    r = _cli_score(world, data)
    assert r.exit_code == 1, r.stdout + r.stderr
    checks = {c["name"]: c for c in json.loads(r.stdout)["gate"]["checks"]}
    assert checks["expectations_present"]["status"] == "fail"
    assert TASK in checks["expectations_present"]["explanation"]


def test_copies_of_a_verified_passing_export_count_once(world, tmp_path):
    data = _export(world, "atif", tmp_path / "x", agent_name="good")
    folder = tmp_path / "copies"
    folder.mkdir()
    for i in range(5):
        (folder / f"copy{i}.jsonl").write_text(data.read_text())
    report = _score(world, folder)
    assert [t.session_id for t in report.trajectories] == [world["good"]]
    assert len(report.problems) == 4 and all("already scored" in p.message for p in report.problems)

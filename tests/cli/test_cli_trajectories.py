"""`agent-rl-sandbox trajectories list|show` and `tasks list` over real sandbox episodes in a real
SQLite store, through the CLI as a user runs it (piped: 80 columns, ids never cut)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR

TASK = "claim-before-edit"
FIXED = (BUILTIN_TASKS_DIR / TASK / "solution" / "files" / "pricing.py").read_text()
GOOD_MESSAGE = "Ran python -m pytest -q after the edit: all tests passed."
PIPED = {"COLUMNS": "80"}

runner = CliRunner()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A good and a careless finished episode of claim-before-edit."""
    home = tmp_path_factory.mktemp("cli-traj") / "home"
    s = Services.build(Settings(home=home))
    try:
        sb = s.sandbox
        good = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="good"))
        sb.claim(io.SandboxClaimInput(sandbox_id=good.sandbox_id, paths=["shopcart/pricing.py"]))
        sb.write_file(io.SandboxWriteFileInput(sandbox_id=good.sandbox_id, path="shopcart/pricing.py", content=FIXED))
        sb.exec(io.SandboxExecInput(sandbox_id=good.sandbox_id, command="python -m pytest -q"))
        sb.finish(io.SandboxFinishInput(sandbox_id=good.sandbox_id, message=GOOD_MESSAGE))
        bad = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="careless"))
        sb.write_file(io.SandboxWriteFileInput(sandbox_id=bad.sandbox_id, path="shopcart/pricing.py", content=FIXED))
        sb.finish(io.SandboxFinishInput(sandbox_id=bad.sandbox_id, message="Fixed it. All tests pass."))
    finally:
        s.close()
    return {"home": str(home), "good": good.session_id, "bad": bad.session_id}


def cli(*args: str, home: str | None = None):
    extra = ["--home", home] if home else []
    return runner.invoke(app, [*args, *extra], env=PIPED)


def test_list_shows_whole_ids_and_filters(world):
    r = cli("trajectories", "list", home=world["home"])
    assert r.exit_code == 0, r.stdout + r.stderr
    for needle in (world["good"], world["bad"], TASK, "good", "careless", "finished", "2 of 2"):
        assert needle in r.stdout, needle
    r = cli("trajectories", "list", "--agent", "good", "--json", home=world["home"])
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["total"] == 1 and [t["session_id"] for t in doc["trajectories"]] == [world["good"]]
    t = doc["trajectories"][0]
    assert t["task_id"] == TASK and t["passed"] is True and t["reward"] == 1.0
    r = cli("trajectories", "list", "--limit", "1", home=world["home"])
    assert r.exit_code == 0 and "1 of 2; --limit N for more" in r.stdout
    r = cli("trajectories", "list", "--task", "claim-before-edit/heldout-1", home=world["home"])
    assert r.exit_code == 0 and "no trajectories match task 'claim-before-edit/heldout-1'" in r.stdout


def test_an_unknown_task_is_exit_2_with_one_message_in_list_and_export(world):
    """Fresh user: `trajectories list --task nope` exited 0 ("no trajectories match") while
    `export sft --task nope` exited 2: a task neither a folder nor the store knows is bad input in both."""
    listed = cli("trajectories", "list", "--task", "nope", home=world["home"])
    exported = cli("export", "sft", "--task", "nope", home=world["home"])
    for r in (listed, exported):
        assert r.exit_code == 2 and r.stdout == "", (r.exit_code, r.stdout)
        assert r.stderr.startswith("error: unknown task 'nope': no task folder and no stored trajectory")
    assert listed.stderr == exported.stderr
    # a task only the store knows (no folder) is known: its trajectories are listed
    store_only = cli("trajectories", "list", "--task", TASK, "--agent", "nobody", home=world["home"])
    assert store_only.exit_code == 0 and "no trajectories match" in store_only.stdout


def _criteria_rows(out: str) -> dict[str, list[str]]:
    """The criteria table's rows: criterion id -> [status, value, weight, explanation]."""
    rows: dict[str, list[str]] = {}
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("criteria of "))
    for ln in lines[start:]:
        cells = [c.strip() for c in ln.split("│")[1:-1]]
        if len(cells) == 5 and cells[0]:
            rows[cells[0]] = cells[1:]
        if ln.startswith("└"):
            break
    return rows


def test_show_and_score_store_list_every_criterion_with_its_explanation(world):
    """Fresh user: `trajectories show` listed no criteria (the README says it does) and `score
    store:ID` named only the failed ones. Both print every criterion: status, value, weight and the
    explanation that `score --json` (the same scorer as eval_score and the web page) gives."""
    ref = json.loads(cli("score", f"store:{world['bad']}", "--json", home=world["home"]).stdout)
    criteria = ref["trajectories"][0]["criteria"]
    assert any(c["status"] == "pass" for c in criteria) and any(c["status"] == "fail" for c in criteria)
    for args in (("trajectories", "show", world["bad"]), ("score", f"store:{world['bad']}")):
        r = cli(*args, home=world["home"])
        assert r.exit_code == 0, r.stdout + r.stderr
        rows = _criteria_rows(r.stdout)
        assert set(rows) == {c["id"] for c in criteria}, args
        for c in criteria:
            status, _value, weight, explanation = rows[c["id"]]
            assert status.startswith(c["status"]) and float(weight) == c["weight"]
            assert explanation == c["explanation"], (args, c["id"])
    claim = next(c for c in criteria if c["id"] == "claims_before_edit")
    assert "edited before claiming: shopcart/pricing.py (step" in claim["explanation"]


def test_show_prints_summary_and_steps(world):
    r = cli("trajectories", "show", world["good"], home=world["home"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = r.stdout
    for needle in (
        world["good"],
        TASK,
        "good",
        "finished",
        "1.000",
        "passed",
        "self_report_only",
        "final message",
        "all tests passed",
        "sandbox_claim",
        "sandbox_write_file",
        "path=shopcart/pricing.py",
        "sandbox_exec",
        "command=python -m pytest -q",
        "server",
        "sandbox_finish",
    ):
        assert needle in out, needle
    exec_row = next(line for line in out.splitlines() if "sandbox_exec" in line)
    assert " ok " in exec_row and " 0 " in exec_row and "passed" in exec_row  # outcome, exit code, observation
    bad = cli("trajectories", "show", world["bad"], home=world["home"])
    summary = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in bad.stdout.splitlines()
        if line.count("│") == 3
    }
    assert summary["passed"] == "no" and summary["self_report_only"] == "yes" and summary["reward"] != "1.000"


def test_show_piped_prints_every_argument_and_observation_whole(world):
    """Piped (not a terminal), a step's arguments and observation are not previews: the written file's
    whole content and the whole test output are on the step's row, nothing cut with an ellipsis."""
    from agent_rl_sandbox.tools.store import Store

    r = cli("trajectories", "show", world["good"], home=world["home"])
    assert r.exit_code == 0 and "\N{HORIZONTAL ELLIPSIS}" not in r.stdout
    rows = r.stdout.splitlines()
    write_row = next(line for line in rows if "sandbox_write_file" in line)
    assert f"content={' '.join(FIXED.split())}" in write_row
    store = Store(f"sqlite:///{world['home']}/store.db")
    try:
        steps = store.trajectories.get(world["good"]).steps
    finally:
        store.close()
    ran = next(st for st in steps if st.tool_calls and st.tool_calls[0].function_name == "sandbox_exec")
    output = " ".join(ran.observation.results[0].content.split())
    assert len(output) > 60 and any(output in line for line in rows)


def test_show_json_is_the_whole_trajectory(world):
    r = cli("trajectories", "show", world["good"], "--json", home=world["home"])
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["session_id"] == world["good"] and doc["schema_version"].startswith("ATIF-v1")
    assert doc["task_id"] == TASK and doc["passed"] is True and doc["final_message"] == GOOD_MESSAGE
    tools = [c["function_name"] for s in doc["steps"] for c in s.get("tool_calls") or []]
    assert tools == ["sandbox_claim", "sandbox_write_file", "sandbox_exec", "sandbox_finish"]
    assert {s["provenance"] for s in doc["steps"]} == {"server"}


def test_show_unknown_id_exits_2(world):
    r = cli("trajectories", "show", "traj_nope", home=world["home"])
    assert r.exit_code == 2 and r.stdout == ""
    assert "unknown trajectory 'traj_nope'" in r.stderr and "trajectories list" in r.stderr


def test_tasks_list_folds_ids_and_prints_json():
    r = cli("tasks", "list")
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(cli("tasks", "list", "--json").stdout)
    ids = [t["id"] for t in doc["tasks"]]
    assert f"{TASK}/heldout-1" in ids and doc["problems"] == []
    assert {"id", "behaviour", "split", "description", "root"} <= set(doc["tasks"][0])
    for tid in ids:  # every id whole on one line of the table, even piped at 80 columns
        assert tid in r.stdout, tid
    assert "…" not in "".join(line.split("│")[1] for line in r.stdout.splitlines() if line.count("│") > 1)

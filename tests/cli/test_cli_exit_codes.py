"""The one exit-code rule, command group by command group, through typer's CliRunner on real files,
a real SQLite store and real sandboxes: 0 ok, 1 the verdict failed, 2 bad input (unknown task or
id, unreadable file, nothing scored, bad settings), with bad input always one ``error:`` line on
stderr and nothing on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUITE = FIXTURES / "port_daddy" / "claim_before_edit.suite.json"
BAD_SUITE = FIXTURES / "port_daddy" / "self_report_only.suite.json"
ATIF = FIXTURES / "imports" / "atif" / "openhands__hello-world.trajectory.json"
WITH_PROBLEMS = FIXTURES / "imports" / "claude_code" / "session-7f3c1a52.jsonl"
SFT = FIXTURES / "samples" / "trl" / "language_modeling_standard.jsonl"
TASK = "claim-before-edit"

runner = CliRunner()


def cli(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})


def assert_bad_input(r, needle: str) -> None:
    """Exit 2, the reason on one ``error:`` line of stderr with a next step, nothing on stdout."""
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.stderr
    assert "Next step: " in lines[0] and r.stdout == ""


def write_task(root: Path, task_id: str, *, known_bad_as_good: bool) -> Path:
    """A tiny user task whose oracle writes 42; its known-bad script fails, or (to make ``tasks
    check`` fail) is the oracle itself, so it is not scored strictly lower."""
    good = {
        "calls": [
            {"tool": "sandbox_write_file", "args": {"path": "answer.txt", "content": "42\n"}},
            {"tool": "sandbox_finish", "args": {"message": "wrote 42"}},
        ]
    }
    bad = good if known_bad_as_good else {"calls": [{"tool": "sandbox_finish", "args": {"message": "done"}}]}
    (root / "repo").mkdir(parents=True)
    (root / "repo" / "answer.txt").write_text("0\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text(
        '#!/usr/bin/env bash\ncd "$SANDBOX_REPO" || exit 2\ngrep -q 42 answer.txt\n'
    )
    (root / "instruction.md").write_text("# Demo\n\nPut 42 in answer.txt.\n")
    (root / "task.toml").write_text(
        f'id = "{task_id}"\nbehaviour = "demo"\n[reward]\naggregation = "all"\n'
        '[[reward.criteria]]\nid = "verifier_passes"\ntype = "verifier_exit_code"\n'
    )
    (root / "solution").mkdir()
    (root / "solution" / "oracle.json").write_text(json.dumps(good))
    (root / "solution" / "known_bad.json").write_text(json.dumps(bad))
    return root


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> str:
    """A store holding one imported ATIF trajectory."""
    home = tmp_path_factory.mktemp("exit-codes") / "home"
    r = cli("import", str(ATIF), "--home", str(home))
    assert r.exit_code == 0, r.output
    return str(home)


def test_tasks(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_RL_SANDBOX_TASK_DIRS", raising=False)
    assert cli("tasks", "list").exit_code == 0
    assert cli("tasks", "show", TASK).exit_code == 0
    assert_bad_input(cli("tasks", "show", "nope"), "unknown task 'nope'")
    assert_bad_input(cli("tasks", "check", "nope"), "unknown task 'nope'")
    user = tmp_path / "tasks"
    write_task(user / "good", "user/good", known_bad_as_good=False)
    write_task(user / "flat", "user/flat", known_bad_as_good=True)
    dirs = ["--task-dir", str(user), "--home", str(tmp_path / "home")]
    good = cli("tasks", "check", "user/good", *dirs)
    assert good.exit_code == 0
    assert "checking 1 task(s)" in good.stderr and "[1/1] user/good: ok (oracle 1.000" in good.stderr  # progress
    # one name for the known-bad script's reward, in the progress lines and the table's header
    assert "known-bad 0.000" in good.stderr and "known-bad reward" in good.stdout and "bad reward" not in good.stderr
    failed = cli("tasks", "check", "user/flat", *dirs)
    assert failed.exit_code == 1 and "FAIL" in failed.stdout, failed.output
    assert "[1/1] user/flat: FAIL" in failed.stderr


def test_tables_fold_long_ids_instead_of_cutting_them(tmp_path):
    long_id = "user/" + "a-very-long-task-identifier-" * 3 + "end"
    write_task(tmp_path / "tasks" / "long", long_id, known_bad_as_good=False)
    r = runner.invoke(
        app, ["tasks", "check", long_id, "--task-dir", str(tmp_path / "tasks"), "--home", str(tmp_path / "h")],
        env={"COLUMNS": "60"},
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    table = r.stdout
    assert "…" not in table and long_id.replace("\n", "") in "".join(
        line.strip("│┃ ").split("│")[0].strip() for line in table.splitlines()
    )


def test_trajectories(home):
    listed = cli("trajectories", "list", "--json", "--home", home)
    assert listed.exit_code == 0
    sid = json.loads(listed.stdout)["trajectories"][0]["session_id"]
    assert cli("trajectories", "show", sid, "--home", home).exit_code == 0
    # a known task with no trajectories is an answer (exit 0); a task nothing knows is bad input
    assert cli("trajectories", "list", "--task", "setup-triage/train-1", "--home", home).exit_code == 0
    assert_bad_input(cli("trajectories", "list", "--task", "nope", "--home", home), "unknown task 'nope'")
    assert_bad_input(cli("trajectories", "show", "traj_nope", "--home", home), "unknown trajectory 'traj_nope'")


def test_score(tmp_path, home):
    h = ["--home", str(tmp_path / "home")]
    assert cli("score", str(SUITE), "--gate", "default", *h).exit_code == 0
    assert cli("score", str(BAD_SUITE), *h).exit_code == 0  # scoring alone is not a verdict
    assert cli("score", str(BAD_SUITE), "--gate", "default", *h).exit_code == 1
    assert_bad_input(cli("score", str(tmp_path / "missing.json"), *h), "missing.json: no such file")
    assert_bad_input(cli("score", str(SUITE), "--gate", "nope", *h), "unknown gate 'nope'")
    assert_bad_input(
        cli("score", "store", "--task", "nope", "--home", home), "no finished trajectories match task 'nope'"
    )
    unwritable = tmp_path / "no-such-dir" / "report.json"
    assert_bad_input(cli("score", str(SUITE), "--out", str(unwritable), *h), f"cannot write {unwritable}")


def test_validate(tmp_path):
    assert cli("validate", str(SFT)).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n')
    assert cli("validate", str(bad)).exit_code == 1
    missing = tmp_path / "missing.jsonl"
    assert_bad_input(cli("validate", str(missing)), f"could not read: no such file: {missing}")
    # a readable file beside it is still reported on stdout; the unreadable one is the error line
    both = cli("validate", str(SFT), str(tmp_path))
    assert both.exit_code == 2 and "OK rows=1" in both.stdout and str(tmp_path) not in both.stdout
    assert both.stderr.startswith(f"error: could not read: {tmp_path} is a directory") and "Next step: " in both.stderr
    # a file-level finding (no line) says "file", never Python's None
    few = cli("validate", str(FIXTURES / "samples" / "openai-chat-ft" / "multi_turn_weight.from-docs.jsonl"))
    assert few.exit_code == 0 and "warning file $ [too_few_examples]" in few.stdout and "None" not in few.stdout
    assert_bad_input(cli("validate", str(SFT), "--kind", "nope"), "unknown kind 'nope'")
    # the eval file alone is not compared with itself: said, not silently "OK"
    itself = cli("validate", str(SFT), "--eval", str(SFT))
    assert itself.exit_code == 0 and "is the --eval file itself" in itself.stderr
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(SFT.read_bytes())
    leaked = cli("validate", str(copy), "--eval", str(SFT))
    assert leaked.exit_code == 1 and "prompt_leak" in leaked.stdout and "itself" not in leaked.stderr


def test_import(tmp_path):
    h = ["--home", str(tmp_path / "home")]
    assert cli("import", str(ATIF), *h).exit_code == 0
    assert cli("import", str(WITH_PROBLEMS), *h).exit_code == 1
    missing = cli("import", str(tmp_path / "missing.jsonl"), *h)
    assert missing.exit_code == 2 and "error: " in missing.stderr and "cannot read" in missing.stderr
    # the worst outcome over all files wins; the readable file is still imported
    both = cli("import", str(tmp_path / "missing.jsonl"), str(WITH_PROBLEMS), "--json", *h)
    assert both.exit_code == 2 and json.loads(both.stdout)[0]["format"] == "claude_code"
    assert_bad_input(cli("import", str(ATIF), "--format", "nope", *h), "unknown import format 'nope'")


def test_export(tmp_path, home):
    out = ["--out", str(tmp_path / "exports"), "--home", home]
    unknown = cli("export", "atif", *out)  # the imported trajectory names no task: left out, a verdict
    assert unknown.exit_code == 1 and "skipped_unknown_task=1" in unknown.stderr
    assert cli("export", "atif", "--include-unknown-tasks", *out).exit_code == 0
    refused = cli("export", "dpo", "--include-heldout", *out)  # a refusal is a verdict
    assert refused.exit_code == 1 and "training format" in refused.stderr
    assert_bad_input(cli("export", "nope", *out), "unknown export format 'nope'")


def test_export_filters_are_validated(tmp_path, home):
    out = ["--out", str(tmp_path / "exports"), "--home", home]
    assert_bad_input(cli("export", "sft", "--task", "no-such-task", *out), "unknown task 'no-such-task'")
    for bad in ("1.5", "-0.1"):
        assert_bad_input(cli("export", "sft", "--min-reward", bad, *out), "outside [0, 1]")
    # a task known to the registry (no trajectories of it) is a filter, not an error
    known = cli("export", "atif", "--task", TASK, "--include-unknown-tasks", *out)
    assert known.exit_code == 1 and "error:" not in known.stderr


def test_demo_and_hook(tmp_path):
    assert_bad_input(cli("demo", "--task", "nope", "--home", str(tmp_path / "home")), "unknown task 'nope'")
    # a hook never breaks its client: garbage on stdin still exits 0
    r = runner.invoke(
        app, ["hook", "claude-code"], input="not json", env={"AGENT_RL_SANDBOX_HOME": str(tmp_path / "h")}
    )
    assert r.exit_code == 0 and r.stdout == ""


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("AGENT_RL_SANDBOX_ISOLATION", "bogus"),
        ("AGENT_RL_SANDBOX_IDLE_SECONDS", "soon"),
        ("AGENT_RL_SANDBOX_JOB_MAX_STEPS", "many"),
        ("AGENT_RL_SANDBOX_JOB_EXPIRY_HOURS", "x"),
        ("AGENT_RL_SANDBOX_IDLE_SECONDS", "-1"),
    ],
)
def test_bad_settings_exit_2(tmp_path, var, value):
    for args in (
        ["tasks", "list"],
        ["score", str(SUITE)],
        ["trajectories", "list"],
        ["import", str(ATIF)],
        ["export", "sft"],
        ["config", "codex"],
        ["hook", "drain"],
    ):
        r = cli(*args, env={var: value, "AGENT_RL_SANDBOX_HOME": str(tmp_path)})
        assert_bad_input(r, f"bad setting {var}=")  # names the variable, the value and what is wrong
        assert f"fix or unset {var}" in r.stderr


def test_a_home_that_cannot_be_made_is_one_error_line(tmp_path):
    """Fresh user (session 4): a file where the home should be gave a traceback (exit 1), and
    ``demo`` an ExceptionGroup from its server; now one ``error:`` line naming the folder, exit 2."""
    afile = tmp_path / "afile"
    afile.write_text("")
    for args in (["trajectories", "list"], ["demo"]):
        r = cli(*args, env={"AGENT_RL_SANDBOX_HOME": str(afile)})
        assert_bad_input(r, f"cannot use {afile} as the home folder")


def test_export_bad_times_and_unknown_behaviours_are_bad_input(tmp_path):
    """Fresh user (session 4): ``--since yesterday`` and ``--behaviour nope`` were verdicts (exit 1)."""
    h = ["--home", str(tmp_path / "home")]
    assert_bad_input(cli("export", "sft", "--since", "yesterday", *h), "bad time --since 'yesterday'")
    assert_bad_input(cli("export", "sft", "--until", "soon", *h), "bad time --until 'soon'")
    assert_bad_input(cli("export", "sft", "--behaviour", "nope", *h), "unknown behaviour 'nope'")
    assert cli("export", "sft", "--behaviour", "setup-triage", *h).exit_code == 1  # known, nothing to export


def test_the_kill_switch_on_nothing_deployed_says_so_and_still_succeeds(tmp_path):
    h = ["--home", str(tmp_path / "home")]
    typo = cli("adapters", "disable", "setup-triag", *h)
    assert typo.exit_code == 0 and typo.stdout == (
        "kill switch: setup-triag now routes to the base model (no adapter was deployed for 'setup-triag')\n"
    )
    assert "no task has the behaviour 'setup-triag'" in typo.stderr and "setup-triage" in typo.stderr
    known = cli("adapters", "disable", "setup-triage", *h)
    assert known.exit_code == 0 and "no adapter was deployed" in known.stdout and known.stderr == ""
    as_json = cli("adapters", "disable", "setup-triage", "--json", *h)
    assert json.loads(as_json.stdout) == {"adapter": None, "routes": {}} and "no adapter was deployed" in as_json.stderr

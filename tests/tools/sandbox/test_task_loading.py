"""Task folders: malformed ones fail with the file and field named; user folders load beside the
built-in ones through the setting, the environment and the CLI flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sandbox_helpers import write_task
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas.tools import ListTasksInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import TaskError, discover_tasks, load_task

GOOD_ORACLE = json.dumps(
    {
        "calls": [
            {"tool": "sandbox_write_file", "args": {"path": "answer.txt", "content": "42\n"}},
            {"tool": "sandbox_finish", "args": {"message": "wrote 42"}},
        ]
    }
)
BAD_SCRIPT = json.dumps({"calls": [{"tool": "sandbox_finish", "args": {"message": "done"}}]})


def _error(root: Path) -> str:
    with pytest.raises(TaskError) as ei:
        load_task(root)
    return ei.value.message


@pytest.mark.parametrize(
    ("toml_extra", "where"),
    [
        ("bogus = 1", "field `bogus`"),
        ('split = "test"', "field `split`"),
        ("allow_internet = true", "field `allow_internet`"),
        ('agent_timeout_seconds = "soon"', "field `agent_timeout_seconds`"),
        ("[limits]\nwall_seconds = -1", "field `limits.wall_seconds`"),
        ('[limits]\nmemory_mb = "lots"', "field `limits.memory_mb`"),
        ('[tools]\nforbidden_command_patterns = ["curl("]', "field `tools.forbidden_command_patterns`"),
        ('[credentials]\n"NOT A NAME" = "x"', "field `credentials`"),
    ],
)
def test_malformed_task_toml_names_file_and_field(tmp_path, toml_extra, where):
    root = write_task(tmp_path / "t", toml_extra=toml_extra)
    msg = _error(root)
    assert str(root / "task.toml") in msg
    assert where in msg, msg


def test_bad_reward_criterion_names_the_field(tmp_path):
    root = write_task(tmp_path / "t", reward='[reward]\n[[reward.criteria]]\nid = "x"\ntype = "no_such_type"\n')
    msg = _error(root)
    assert str(root / "task.toml") in msg and "field `reward.criteria.0" in msg


def test_invalid_toml_syntax_names_the_file(tmp_path):
    root = write_task(tmp_path / "t")
    (root / "task.toml").write_text('id = "x\n')
    msg = _error(root)
    assert str(root / "task.toml") in msg and "TOML" in msg


@pytest.mark.parametrize("missing", ["instruction.md", "tests/test.sh", "repo", "task.toml"])
def test_missing_parts_are_named(tmp_path, missing):
    root = write_task(tmp_path / "t")
    target = root / missing
    if target.is_dir():
        import shutil

        shutil.rmtree(target)
    else:
        target.unlink()
    assert str(target) in _error(root)


def test_reward_spec_file_errors_name_file_and_field(tmp_path):
    root = write_task(tmp_path / "t", reward='reward_spec = "reward.json"\n')
    msg = _error(root)
    assert "field `reward_spec`" in msg and "reward.json" in msg
    (root / "reward.json").write_text(json.dumps({"criteria": [{"id": "x", "type": "file_exists"}]}))
    msg = _error(root)
    assert str(root / "reward.json") in msg and "field `criteria.0" in msg
    (root / "task.toml").write_text('id = "user/demo"\nbehaviour = "d"\nreward_spec = "../outside.json"\n')
    assert "field `reward_spec`" in _error(root)


def test_malformed_scripted_trajectory_names_file_and_field(tmp_path):
    root = write_task(tmp_path / "t", oracle=json.dumps({"calls": [{"tool": "x", "argz": {}}]}), known_bad=BAD_SCRIPT)
    task = load_task(root)
    with pytest.raises(TaskError) as ei:
        task.scripted("oracle")
    assert str(root / "solution" / "oracle.json") in ei.value.message and "calls.0.argz" in ei.value.message


def test_user_task_folders_load_beside_builtin_ones(tmp_path):
    user = tmp_path / "my-tasks"
    write_task(user / "good", "user/good")
    write_task(user / "bad", "user/bad", toml_extra="bogus = 1")
    write_task(user / "dupe", "claim-before-edit")
    found, problems = discover_tasks((user, tmp_path / "missing"))
    assert "user/good" in found and "claim-before-edit" in found and "user/bad" not in found
    assert found["claim-before-edit"].root.name == "claim-before-edit"  # the built-in one wins
    text = "\n".join(problems)
    assert str(user / "bad" / "task.toml") in text and "field `bogus`" in text
    assert "duplicate task id 'claim-before-edit'" in text
    assert str(tmp_path / "missing") in text


def test_task_dirs_setting_and_environment(tmp_path, monkeypatch):
    user = tmp_path / "my-tasks"
    write_task(user / "good", "user/good")
    monkeypatch.setenv("AGENT_RL_SANDBOX_TASK_DIRS", str(user))
    settings = Settings.from_env(home=tmp_path / "home")
    assert settings.task_dirs == (user,)
    services = Services.build(settings)
    try:
        ids = [t.id for t in services.sandbox.list_tasks(ListTasksInput()).tasks]
        assert "user/good" in ids and "claim-before-edit" in ids
    finally:
        services.sandbox.close()
        services.close()


def test_cli_task_dir_flag_for_list_show_and_check(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_RL_SANDBOX_TASK_DIRS", raising=False)
    user = tmp_path / "my-tasks"
    write_task(user / "good", "user/good", oracle=GOOD_ORACLE, known_bad=BAD_SCRIPT)
    runner = CliRunner()
    res = runner.invoke(app, ["tasks", "list", "--task-dir", str(user)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "user/good" in res.output and "claim-before-edit" in res.output
    res = runner.invoke(app, ["tasks", "show", "user/good", "--task-dir", str(user)])
    assert res.exit_code == 0 and "Put 42 in answer.txt" in res.output
    res = runner.invoke(
        app,
        ["tasks", "check", "user/good", "--task-dir", str(user), "--home", str(tmp_path / "home")],
        env={"COLUMNS": "200"},
    )
    assert res.exit_code == 0, res.output
    assert "user/good" in res.output and "ok" in res.output
    write_task(user / "bad", "user/bad", toml_extra="bogus = 1")
    res = runner.invoke(app, ["tasks", "list", "--task-dir", str(user)], env={"COLUMNS": "300"})
    assert res.exit_code == 1 and "bogus" in res.output

"""The reward direction test (tools/sandbox/_direction.py): the real task's oracle scores strictly above
its known-bad script, and a deliberately inverted spec is refused for training."""

from __future__ import annotations

import shutil
import tomllib

import pytest

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR, DirectionError, direction_check, require_direction

TASK = "claim-before-edit"


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    s = Services.build(Settings(home=tmp_path_factory.mktemp("direction") / "home"))
    yield s
    s.close()


def test_direction_check_passes_for_the_builtin_task(svc):
    result = direction_check(svc.sandbox, TASK)
    assert result.ok, result.problems
    assert result.good_reward > result.bad_reward and result.good_passed and not result.bad_passed


def test_inverted_spec_is_refused_for_training(tmp_path):
    task_dir = tmp_path / "tasks" / "inverted"
    shutil.copytree(BUILTIN_TASKS_DIR / TASK, task_dir)
    toml = (task_dir / "task.toml").read_text()
    head = toml.split("[reward]")[0].replace('id = "claim-before-edit"', 'id = "claim-before-edit-inverted"')
    inverted = head + (
        '[reward]\naggregation = "all"\n\n[[reward.criteria]]\nid = "never_claim"\ntype = "forbidden_action"\n'
        'action = { tool = "sandbox_claim" }\n'
    )
    (task_dir / "task.toml").write_text(inverted)
    assert tomllib.loads(inverted)["id"] == "claim-before-edit-inverted"
    services = Services.build(Settings(home=tmp_path / "home", task_dirs=(tmp_path / "tasks",)))
    try:
        result = direction_check(services.sandbox, "claim-before-edit-inverted")
        assert not result.ok
        assert result.bad_reward > result.good_reward
        assert any("direction test" in p for p in result.problems)
        with pytest.raises(DirectionError, match="refused for training"):
            require_direction(services.sandbox, "claim-before-edit-inverted")
        missing = direction_check(services.sandbox, "no-such-task")
        assert not missing.ok and "unknown task" in missing.problems[0]
    finally:
        services.close()

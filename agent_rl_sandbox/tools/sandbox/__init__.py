"""Sandboxes: task loading, isolated command execution, path safety, the sandbox service and the
reward direction test (a task's oracle must score strictly above its known-bad script)."""

from agent_rl_sandbox.tools.sandbox._direction import DirectionCheck, DirectionError, direction_check, require_direction
from agent_rl_sandbox.tools.sandbox._paths import PathRefused, resolve_inside
from agent_rl_sandbox.tools.sandbox._runner import CommandResult, Isolation, detect_isolation, run_command
from agent_rl_sandbox.tools.sandbox._service import SandboxService
from agent_rl_sandbox.tools.sandbox._task import (
    BUILTIN_TASKS_DIR,
    Task,
    TaskError,
    discover_tasks,
    load_task,
    task_behaviours,
)

__all__ = [
    "BUILTIN_TASKS_DIR",
    "CommandResult",
    "DirectionCheck",
    "DirectionError",
    "Isolation",
    "PathRefused",
    "SandboxService",
    "Task",
    "TaskError",
    "detect_isolation",
    "direction_check",
    "discover_tasks",
    "load_task",
    "require_direction",
    "resolve_inside",
    "run_command",
    "task_behaviours",
]

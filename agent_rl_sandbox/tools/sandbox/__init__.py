"""Sandboxes: task loading, isolated command execution, path safety and the sandbox service."""

from agent_rl_sandbox.tools.sandbox._paths import PathRefused, resolve_inside
from agent_rl_sandbox.tools.sandbox._runner import CommandResult, Isolation, detect_isolation, run_command
from agent_rl_sandbox.tools.sandbox._service import SandboxService
from agent_rl_sandbox.tools.sandbox._task import BUILTIN_TASKS_DIR, Task, TaskError, discover_tasks, load_task

__all__ = [
    "BUILTIN_TASKS_DIR",
    "CommandResult",
    "Isolation",
    "PathRefused",
    "SandboxService",
    "Task",
    "TaskError",
    "detect_isolation",
    "discover_tasks",
    "load_task",
    "resolve_inside",
    "run_command",
]

"""The demo: two scripted agents play a task through the real MCP client over stdio.

The good agent is the task's oracle (inspect, claim, edit, run the tests, finish with evidence);
the careless agent is its known-bad script (edit before claiming, claim success with no test run).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_rl_sandbox.agents.scripted import mcp_caller, play_script
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox import discover_tasks

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class DemoResult:
    agent: str
    task_id: str
    session_id: str
    sandbox_id: str
    reward: float
    passed: bool
    self_report_only: bool
    failed_criteria: list[str]
    report_path: str
    tool_errors: list[str]


def server_params(settings: Settings):
    """``StdioServerParameters`` that launch ``agent-rl-sandbox serve`` with this interpreter."""
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")}
    env["AGENT_RL_SANDBOX_HOME"] = str(settings.home)
    env["AGENT_RL_SANDBOX_ISOLATION"] = settings.isolation
    env["AGENT_RL_SANDBOX_LOG_LEVEL"] = "WARNING"
    if settings.database_url:
        env["AGENT_RL_SANDBOX_DATABASE_URL"] = settings.database_url
    if settings.task_dirs:
        env["AGENT_RL_SANDBOX_TASK_DIRS"] = os.pathsep.join(str(p) for p in settings.task_dirs)
    return StdioServerParameters(command=sys.executable, args=["-m", "agent_rl_sandbox.cli", "serve"], env=env)


async def run_demo(settings: Settings, task_id: str = "claim-before-edit") -> list[DemoResult]:
    """Play the oracle ("good") and known-bad ("careless") scripts of ``task_id`` over stdio.

    Returns ``[good, careless]``. Raises ``ActionError`` for an unknown task and ``ScriptError``
    when a script cannot be played.
    """
    from mcp import Client

    from agent_rl_sandbox.tools.errors import ActionError

    tasks, _ = discover_tasks(settings.task_dirs)
    if task_id not in tasks:
        raise ActionError(f"unknown task {task_id!r}", "see `agent-rl-sandbox tasks list`")
    task = tasks[task_id]
    out = []
    async with Client(server_params(settings), read_timeout_seconds=120) as client:
        call = mcp_caller(client)
        for agent, script_name in (("good-agent", "oracle"), ("careless-agent", "known_bad")):
            script, folder = task.scripted(script_name)
            ep = await play_script(call, task_id, script, folder, agent=agent)
            f = ep.finish
            out.append(
                DemoResult(
                    agent=agent,
                    task_id=task_id,
                    session_id=ep.session_id,
                    sandbox_id=ep.sandbox_id,
                    reward=f["reward"],
                    passed=f["passed"],
                    self_report_only=f["self_report_only"],
                    failed_criteria=f["failed_criteria"],
                    report_path=f["report_path"],
                    tool_errors=ep.errors,
                )
            )
    return out


def render_demo(results: list[DemoResult], settings: Settings, console: Console | None = None) -> None:
    """Print the demo table and where the data lives, on ``console`` (default: rich's, the
    terminal's width; the CLI passes its table console, unlimited when piped). Ids never wrap or
    get cut; the failed criteria fold onto more lines on a narrow terminal."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    title = f"agent-rl-sandbox demo: two agents on task {results[0].task_id}, scored from sandbox state"
    columns = ["agent", "trajectory", "reward", "passed", "self-report only", "failed criteria"]
    for inline in (True, False):  # a terminal too narrow for the criteria: they go below the table
        table = Table(title=title)
        for col in columns[: None if inline else -1]:
            table.add_column(col, overflow="fold", no_wrap=col in ("agent", "trajectory", "reward"))
        for r in results:
            row = [
                r.agent,
                r.session_id,
                f"{r.reward:.3f}",
                "[green]yes[/green]" if r.passed else "[red]no[/red]",
                "[yellow]yes[/yellow]" if r.self_report_only else "no",
                ", ".join(r.failed_criteria) or "-",
            ]
            table.add_row(*row[: None if inline else -1])
        if console.measure(table, options=console.options.update_width(1_000_000)).maximum <= console.width:
            break
    console.print(table)
    if not inline:
        for r in results:
            console.print(f"{r.agent} failed criteria: {', '.join(r.failed_criteria) or '-'}", highlight=False)
    # paths whole on one line each (the terminal wraps them; copying one gets it whole)
    console.print(f"store:   {settings.db_url}", soft_wrap=True, highlight=False)
    console.print(f"reports: {settings.reports_dir}", soft_wrap=True, highlight=False)
    for r in results:
        console.print(f"  {r.agent}: {r.report_path}", soft_wrap=True, highlight=False)

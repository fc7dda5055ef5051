"""Issue 11, agents' surface, through the real sandbox service: instructions served dedented (the
fixture files untouched), CPU time of the command itself, a wall-time kill that names its limit and
the cap, UTF-8 paging on character boundaries, the agent name kept across a reset, racing
``sandbox_finish`` calls answered with sandbox advice, and the busy answer only for the owner."""

from __future__ import annotations

import threading
import time

import pytest
from sandbox_helpers import reset, run, write_task

from agent_rl_sandbox.schemas.tools import (
    SandboxExecInput,
    SandboxFinishInput,
    SandboxReadFileInput,
    SandboxResetInput,
)
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR
from agent_rl_sandbox.tools.sandbox._task import dedent_instruction, discover_tasks

BUSY_LOOP = "python3 -c 'import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass'"


def test_instructions_are_served_dedented_and_the_fixtures_stay_as_they_are():
    tasks, problems = discover_tasks()
    assert not problems
    raw_indented = [t for t in tasks.values() if (t.root / "instruction.md").read_text().startswith("    ")]
    assert len(raw_indented) == 11  # the pinned fixture files are not reformatted
    for t in tasks.values():
        first = next(line for line in t.instruction.splitlines() if line.strip())
        assert first.startswith("# "), (t.id, first)
        assert not any(line.startswith("    #") for line in t.instruction.splitlines()), t.id
    # deeper indentation (a list item's continuation, code) keeps what is left over the first line's
    text = "    # Title\n\n    Para\n      continued\n\nNot indented\n        code\n"
    assert dedent_instruction(text) == "# Title\n\nPara\n  continued\n\nNot indented\n    code\n"
    kept = (BUILTIN_TASKS_DIR / "claim-before-edit" / "train-2" / "instruction.md").read_text()
    assert dedent_instruction(kept) == kept  # a first line at column 0: nothing changes


@pytest.mark.parametrize("which", ["bwrap_services", "none_services"])
def test_cpu_s_measures_the_command_not_the_wrapper(request, which):
    services = request.getfixturevalue(which)
    sid = reset(services).sandbox_id
    busy = run(services, sid, BUSY_LOOP)
    assert busy.exit_code == 0
    idle = run(services, sid, "sleep 0.5")
    killed = run(services, sid, "sleep 5", timeout_seconds=0.5)
    cpu = {
        s.extra["command"]: s.extra["cpu_s"]
        for s in services.store.trajectories.get(services.store.sandboxes.get(sid).session_id).steps
        if s.extra.get("command")
    }
    assert cpu[BUSY_LOOP] >= 0.3, cpu  # was ~0.004 under bubblewrap whatever the command did
    assert cpu["sleep 0.5"] < 0.2, cpu
    assert cpu["sleep 5"] is None  # killed from outside before it could report: not measured, not 0
    assert idle.exit_code == 0 and killed.limit_hit == "wall_time"


def test_a_wall_time_kill_names_the_limit_the_request_and_the_cap(tmp_path, bwrap_services):
    task_dir = write_task(tmp_path / "tasks" / "w", "user/wall", limits="wall_seconds = 2")
    settings = Settings(home=tmp_path / "home2", isolation="bwrap", task_dirs=(task_dir.parent,))
    services = Services.build(settings)
    try:
        sid = services.sandbox.reset(SandboxResetInput(task_id="user/wall")).sandbox_id
        asked = run(services, sid, "sleep 5", timeout_seconds=0.5)
        assert asked.limit_hit == "wall_time" and asked.exit_code == -9
        assert "0.5 s you asked for (timeout_seconds=0.5)" in (asked.limit_detail or "")
        capped = run(services, sid, "sleep 5", timeout_seconds=100)
        assert "wall-time limit of 2 s" in capped.limit_detail
        assert "timeout_seconds=100 was asked for" in capped.limit_detail
        assert "the task's wall-time limit (2 s) caps it" in capped.limit_detail
        default = run(services, sid, "sleep 5")
        assert "no timeout_seconds given" in default.limit_detail
        step = [
            s
            for s in services.store.trajectories.get(services.store.sandboxes.get(sid).session_id).steps
            if s.extra.get("command")
        ][-1]
        assert step.extra["wall_limit_s"] == 2 and "no timeout_seconds given" in step.observation.results[0].content
    finally:
        services.sandbox.close()
        services.close()


def test_utf8_reads_page_on_character_boundaries(bwrap_services):
    sid = reset(bwrap_services).sandbox_id
    run(bwrap_services, sid, "printf 'é%.0s' $(seq 10) > e.txt")
    sb = bwrap_services.sandbox
    text, offset = "", 0
    while offset is not None:
        page = sb.read_file(SandboxReadFileInput(sandbox_id=sid, path="e.txt", offset=offset, max_bytes=3))
        assert page.binary is False and len(page.content) == 1
        text += page.content
        offset = page.next_offset
    assert text == "é" * 10
    bad = run(bwrap_services, sid, r"printf 'abc\351def' > latin1.txt")
    assert bad.exit_code == 0
    latin = sb.read_file(SandboxReadFileInput(sandbox_id=sid, path="latin1.txt"))
    assert latin.binary is True and latin.encoding == "base64"


def test_resetting_a_sandbox_keeps_its_agent_name_unless_a_new_one_is_given(services):
    sb = services.sandbox
    first = sb.reset(SandboxResetInput(task_id="claim-before-edit", agent_name="claude-code"))
    again = sb.reset(SandboxResetInput(task_id="claim-before-edit", sandbox_id=first.sandbox_id))
    assert again.agent_name == "claude-code"
    assert services.store.trajectories.summary(again.session_id).agent.name == "claude-code"
    renamed = sb.reset(SandboxResetInput(task_id="claim-before-edit", sandbox_id=first.sandbox_id, agent_name="codex"))
    assert services.store.trajectories.summary(renamed.session_id).agent.name == "codex"
    fresh = sb.reset(SandboxResetInput(task_id="claim-before-edit"))
    assert fresh.agent_name == "unknown"


def test_two_racing_finishes_give_sandbox_advice(services):
    sid = reset(services).sandbox_id
    results: list[object] = []
    barrier = threading.Barrier(2)

    def finish() -> None:
        barrier.wait()
        try:
            results.append(services.sandbox.finish(SandboxFinishInput(sandbox_id=sid, message="done")))
        except ActionError as e:
            results.append(e)

    threads = [threading.Thread(target=finish) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r for r in results if isinstance(r, ActionError)]
    assert len(errors) == 1 and len(results) == 2
    text = errors[0].agent_text()
    assert f"sandbox {sid}" in text and ("is busy" in text or "is finished" in text), text
    assert "sandbox_reset" in text or "call again" in text
    assert "trajectory" not in text.split("Next step")[0], text
    late = pytest.raises(ActionError, services.sandbox.finish, SandboxFinishInput(sandbox_id=sid, message="again"))
    assert "is finished" in late.value.agent_text() and "sandbox_reset" in late.value.agent_text()


def test_busy_answers_go_to_the_owner_only(services):
    alice, mallory = Caller.agent("mcp:alice"), Caller.agent("mcp:mallory")
    sb = services.sandbox
    sid = sb.reset(SandboxResetInput(task_id="claim-before-edit"), alice).sandbox_id
    worker = threading.Thread(
        target=sb.exec, args=(SandboxExecInput(sandbox_id=sid, command="sleep 1.5 # alice-secret"), alice)
    )
    worker.start()
    try:
        for _ in range(200):
            if sid in sb._running:
                break
            time.sleep(0.01)
        t0 = time.monotonic()
        with pytest.raises(ActionError) as mine:
            sb.exec(SandboxExecInput(sandbox_id=sid, command="true"), alice)
        assert time.monotonic() - t0 < 0.5
        assert "is busy: sandbox_exec `sleep 1.5 # alice-secret`" in mine.value.agent_text()
        with pytest.raises(ActionError) as theirs:
            sb.exec(SandboxExecInput(sandbox_id=sid, command="true"), mallory)
        assert "is not yours" in theirs.value.agent_text() and "alice-secret" not in theirs.value.agent_text()
    finally:
        worker.join()
    assert sb.exec(SandboxExecInput(sandbox_id=sid, command="true"), alice).exit_code == 0

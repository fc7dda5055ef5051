"""Issue 11: the MCP surface behaves as clients expect, through the real MCP client: closed input
schemas with the closest valid name, aliases, titles and annotations, the busy answer for parallel
changing calls (never queued past a client's deadline), cancellation through the SDK's own cancel
path, progress notifications, and paging a command's kept output, each checked against a second
(hostile) session too."""

from __future__ import annotations

import base64
import time

import anyio
import pytest
from mcp import Client

from agent_rl_sandbox.server.app import TOOLS, build_server

pytestmark = pytest.mark.anyio

TASK = "claim-before-edit"


@pytest.fixture
def server(services):
    return build_server(services=services)


def _text(res) -> str:
    return "".join(getattr(b, "text", "") for b in res.content)


async def _reset(client, **kw) -> dict:
    res = await client.call_tool("sandbox_reset", {"task_id": TASK, **kw})
    assert not res.is_error, _text(res)
    return res.structured_content


async def test_every_tool_has_a_title_a_closed_schema_and_honest_annotations(server):
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {t.name for t in TOOLS}
    for name, tool in listed.items():
        assert tool.title and tool.title != name, name
        assert tool.input_schema.get("additionalProperties") is False, name
    ann = {n: t.annotations for n, t in listed.items()}
    assert ann["sandbox_exec"].destructive_hint is True and ann["sandbox_exec"].read_only_hint is False
    assert ann["sandbox_write_file"].destructive_hint is True and ann["sandbox_write_file"].idempotent_hint is True
    assert ann["trajectory_log_step"].idempotent_hint is True and ann["trajectory_log_step"].destructive_hint is False
    assert ann["sandbox_read_output"].read_only_hint is True


async def test_unknown_arguments_are_flagged_with_the_closest_name_and_behavior_is_an_alias(server):
    async with Client(server) as client:
        typo = await client.call_tool("list_tasks", {"behavour": "claim-before-edit"})
        assert typo.is_error and "`behavour`" in _text(typo) and "did you mean `behaviour`?" in _text(typo)
        assert "Next step:" in _text(typo)
        reset = await _reset(client)
        sid = reset["sandbox_id"]
        before = len(
            (await client.call_tool("trajectory_get", {"session_id": reset["session_id"]})).structured_content["steps"]
        )
        cwd = await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "rm -rf shopcart", "cwd": "/"})
        assert cwd.is_error and "unknown argument `cwd`" in _text(cwd) and "valid names:" in _text(cwd)
        assert "command, sandbox_id, timeout_seconds" in _text(cwd)
        # refused before anything ran or was recorded
        after = (await client.call_tool("trajectory_get", {"session_id": reset["session_id"]})).structured_content
        assert len(after["steps"]) == before
        nested = await client.call_tool(
            "trajectory_log_step", {"session_id": "x", "steps": [{"message": "a"}, {"mesage": "b"}]}
        )
        assert nested.is_error and "`steps[1].mesage`" in _text(nested) and "`message`" in _text(nested)

        spelled = (await client.call_tool("list_tasks", {"behaviour": "claim-before-edit"})).structured_content
        american = await client.call_tool("list_tasks", {"behavior": "claim-before-edit"})
        assert not american.is_error and american.structured_content == spelled
        assert 0 < spelled["total"] < (await client.call_tool("list_tasks", {})).structured_content["total"]
        gate = await client.call_tool("eval_gate", {"behavior": "no-such-behaviour"})
        assert not gate.is_error, _text(gate)
        both = await client.call_tool("list_tasks", {"behavior": "a", "behaviour": "b"})
        assert both.is_error and "both `behaviour` and `behavior`" in _text(both)


async def test_the_server_and_the_reset_say_there_is_no_git_inside(server, services):
    async with Client(server) as client:
        assert "no git inside the sandbox" in (client.instructions or "")
        reset = await _reset(client)
        assert "no git inside the sandbox" in reset["note"] and "sandbox_state" in reset["note"]
        out = await client.call_tool("sandbox_exec", {"sandbox_id": reset["sandbox_id"], "command": "git status"})
        assert out.structured_content["exit_code"] != 0


async def test_parallel_changing_calls_get_busy_at_once_and_reads_still_answer(server):
    async with Client(server) as client, Client(server) as mallory:
        sid = (await _reset(client))["sandbox_id"]
        results: list[tuple[float, object]] = []
        t0 = time.monotonic()

        async def one() -> None:
            res = await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "sleep 1"})
            results.append((time.monotonic() - t0, res))

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one)
        ran = [r for _, r in results if not r.is_error]
        busy = [(t, r) for t, r in results if r.is_error]
        assert len(ran) == 1 and ran[0].structured_content["exit_code"] == 0
        ran_at = next(t for t, r in results if not r.is_error)
        assert len(busy) == 9 and all(t < ran_at for t, _ in busy), (ran_at, [t for t, _ in busy])
        for _, r in busy:
            assert "is busy: sandbox_exec `sleep 1`" in _text(r) and "call again" in _text(r)
        assert max(t for t, _ in results) < 5  # was 10.5 s: one command at a time, queued

        # a long command holds the sandbox: reads answer, changing calls are busy, a stranger learns nothing
        long: list = []

        async def hold() -> None:
            long.append(await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "sleep 2 # secret-cmd"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            for _ in range(100):
                state = (await client.call_tool("sandbox_state", {"sandbox_id": sid})).structured_content
                if state["busy"]:
                    break
                await anyio.sleep(0.02)
            assert "secret-cmd" in state["busy"] and "from before it" in state["busy"]
            t1 = time.monotonic()
            read = await client.call_tool("sandbox_read_file", {"sandbox_id": sid, "path": "shopcart/pricing.py"})
            write = await client.call_tool(
                "sandbox_write_file", {"sandbox_id": sid, "path": "shopcart/pricing.py", "content": "x"}
            )
            assert time.monotonic() - t1 < 1.5
            assert not read.is_error and "def apply_discount" in read.structured_content["content"]
            assert write.is_error and "is busy" in _text(write)
            for tool, args in (
                ("sandbox_exec", {"sandbox_id": sid, "command": "true"}),
                ("sandbox_state", {"sandbox_id": sid}),
                ("sandbox_finish", {"sandbox_id": sid, "message": "done"}),
            ):
                res = await mallory.call_tool(tool, args)
                assert res.is_error and "is not yours" in _text(res), tool
                assert "secret-cmd" not in _text(res) and "busy" not in _text(res), tool
        assert not long[0].is_error and long[0].structured_content["exit_code"] == 0, _text(long[0])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_cancelled_call_kills_its_command_and_is_recorded_cancelled(server, services, mode):
    async with Client(server, mode=mode) as client:
        reset = await _reset(client)
        sid, session = reset["sandbox_id"], reset["session_id"]
        t0 = time.monotonic()
        with pytest.raises(Exception, match="(?i)timed out"):  # the SDK's own timeout sends notifications/cancelled
            await client.call_tool(
                "sandbox_exec", {"sandbox_id": sid, "command": "sleep 30; touch late.txt"}, read_timeout_seconds=1
            )
        step = None
        for _ in range(100):
            last = services.store.trajectories.get(session).steps[-1]
            if last.extra.get("command", "").startswith("sleep 30"):
                step = last
                break
            await anyio.sleep(0.1)
        assert step is not None and time.monotonic() - t0 < 12
        assert step.outcome == "cancelled" and step.extra["cancelled"] is True
        assert "cancelled by the client" in step.observation.results[0].content
        again = await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "sleep 0.2; ls late.txt"})
        assert not again.is_error, _text(again)  # not busy any more, and the command never got to its end
        assert again.structured_content["exit_code"] != 0


async def test_progress_notifications_reach_a_client_that_asks(server):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(server, mode="legacy") as client:
        sid = (await _reset(client))["sandbox_id"]
        res = await client.call_tool(
            "sandbox_exec", {"sandbox_id": sid, "command": "sleep 2.3; echo ok"}, progress_callback=on_progress
        )
        assert res.structured_content["stdout"] == "ok\n"
        silent = await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "sleep 1.2"})
        assert not silent.is_error
    assert len(seen) >= 2 and [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)
    assert seen[0][1] == 30 and "sandbox_exec `sleep 2.3; echo ok`" in (seen[0][2] or "")


async def test_kept_output_pages_by_step_id_and_only_for_its_owner(server, services):
    async with Client(server) as client, Client(server) as mallory:
        reset = await _reset(client)
        sid = reset["sandbox_id"]
        cmd = "python -c \"import sys; sys.stdout.write(''.join(f'{i:06d}\\n' for i in range(6000)))\""
        out = (await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": cmd})).structured_content
        assert out["output_path"] and "sandbox_read_output" in out["stdout"][-200:]
        pages, offset = [], 0
        while offset is not None:
            page = await client.call_tool(
                "sandbox_read_output",
                {"sandbox_id": sid, "step_id": out["step_id"], "offset": offset, "max_bytes": 20_000},
            )
            assert not page.is_error, _text(page)
            pages.append(page.structured_content["content"])
            offset = page.structured_content["next_offset"]
        whole = "".join(pages)
        assert "".join(f"{i:06d}\n" for i in range(6000)) in whole and whole.startswith(f"$ {cmd}\n")

        # a stranger with the sandbox id and step id; the owner with a step that kept nothing
        stolen = await mallory.call_tool("sandbox_read_output", {"sandbox_id": sid, "step_id": out["step_id"]})
        assert stolen.is_error and "is not yours" in _text(stolen) and "000001" not in _text(stolen)
        other = (await _reset(mallory))["sandbox_id"]
        cross = await mallory.call_tool("sandbox_read_output", {"sandbox_id": other, "step_id": out["step_id"]})
        assert cross.is_error and "has no kept output" in _text(cross)
        short = await client.call_tool("sandbox_exec", {"sandbox_id": sid, "command": "echo hi"})
        none_kept = await client.call_tool(
            "sandbox_read_output", {"sandbox_id": sid, "step_id": short.structured_content["step_id"]}
        )
        assert none_kept.is_error and "has no kept output" in _text(none_kept)
        # a step the agent logs itself cannot name a file for the server to open
        forged = await client.call_tool(
            "trajectory_log_step",
            {"session_id": reset["session_id"], "step": {"message": "x", "extra": {"output_log": "exec-00000000.log"}}},
        )
        if not forged.is_error:
            sid_step = forged.structured_content["steps"][0]["step_id"]
            res = await client.call_tool("sandbox_read_output", {"sandbox_id": sid, "step_id": sid_step})
            assert res.is_error and "has no kept output" in _text(res)
        # after a reset the old episode's outputs are gone, and say so
        await client.call_tool("sandbox_reset", {"task_id": TASK, "sandbox_id": sid})
        gone = await client.call_tool("sandbox_read_output", {"sandbox_id": sid, "step_id": out["step_id"]})
        assert gone.is_error and "000001" not in _text(gone)


async def test_binary_file_reads_say_so(server):
    async with Client(server) as client:
        sid = (await _reset(client))["sandbox_id"]
        await client.call_tool(
            "sandbox_exec", {"sandbox_id": sid, "command": r"printf 'PK\003\004\000\377\376' > b.zip"}
        )
        res = (await client.call_tool("sandbox_read_file", {"sandbox_id": sid, "path": "b.zip"})).structured_content
        assert res["binary"] is True and res["encoding"] == "base64"
        assert base64.b64decode(res["content"]) == b"PK\x03\x04\x00\xff\xfe"
        text = (
            await client.call_tool("sandbox_read_file", {"sandbox_id": sid, "path": "shopcart/pricing.py"})
        ).structured_content
        assert text["binary"] is False and text["encoding"] == "utf-8"

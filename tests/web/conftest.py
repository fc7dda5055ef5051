"""Web page fixtures: a real store with real jobs (``JobService.request`` with real specs and a
validated dataset file), real sandbox episodes (the oracle of ``claim-before-edit`` and a hostile
one whose command output, written file and final message carry HTML and script), an adapter
candidate, and the app served by uvicorn on a loopback port in a thread."""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from agent_rl_sandbox.agents.scripted import play_script, service_caller
from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.schemas.tools import (
    SandboxExecInput,
    SandboxFinishInput,
    SandboxResetInput,
    SandboxWriteFileInput,
)
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.web import WebConfig, bind, create_app, server

sys.path.insert(0, str(Path(__file__).resolve().parent))
from web_world import HOSTILE, TOKEN  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "adapters"))
from fake_vllm import FakeVllm  # noqa: E402  (the loopback vLLM stand-in of the adapter tests)

ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


@dataclass
class World:
    services: Services
    home: Path
    jobs: list
    good: str
    hostile: str
    adapter_id: str


def _spec(data: Path, reason: str) -> JobSpec:
    return JobSpec.model_validate(
        {
            "route": "sft",
            "trainer": "sft",
            "base_model": "tiny-model",
            "dataset": {"kind": "file", "path": str(data / "sft.jsonl")},
            "gate": {"behaviour": "claim-before-edit"},
            "caps": {"max_steps": 50, "timeout_s": 600},
            "reason": reason,
        }
    )


def _hostile_episode(services: Services) -> str:
    sb = services.sandbox
    agent = Caller.agent("mcp:hostile")
    reset = sb.reset(SandboxResetInput(task_id="claim-before-edit", agent_name=f"evil{HOSTILE}"), agent)
    sid = reset.sandbox_id
    sb.write_file(SandboxWriteFileInput(sandbox_id=sid, path="notes.html", content=HOSTILE + "\n"), agent)
    sb.exec(SandboxExecInput(sandbox_id=sid, command="cat notes.html"), agent)
    out = sb.finish(SandboxFinishInput(sandbox_id=sid, message=f"done {HOSTILE}"), agent)
    return out.session_id


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    tmp = tmp_path_factory.mktemp("web")
    data = tmp / "data"
    data.mkdir()
    (data / "sft.jsonl").write_text((json.dumps(ROW) + "\n") * 2)
    home = tmp / "home"
    vllm = FakeVllm(base_model="tiny-model")
    threading.Thread(target=vllm.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    s = Services.build(
        Settings(
            home=home, data_dirs=(data,), models=("tiny-model",), approver="alice",
            vllm_url=vllm.url, vllm_base_model="tiny-model",
        )
    )  # fmt: skip
    agent = Caller.agent("mcp:agent-a")
    reasons = ["teach claiming #0", "teach claiming #1", f"teach claiming {HOSTILE}", "teach claiming #3"]
    jobs = [s.jobs.request(_spec(data, r), agent).job for r in reasons]  # #2: an agent's reason carries HTML
    task = s.sandbox.tasks["claim-before-edit"]
    good = anyio.run(
        lambda: play_script(service_caller(s.sandbox), "claim-before-edit", *task.scripted("oracle"), agent="oracle")
    ).session_id
    hostile = _hostile_episode(s)
    # a job that ran: a workspace with logs, metrics and a plot, and its adapter registered
    ws = s.settings.jobs_dir / jobs[3].job_id
    (ws / "plots").mkdir(parents=True)
    (ws / "run.log").write_text("stage validate: ok\n" + HOSTILE + "\n")
    (ws / "train.log").write_text("".join(f"step {i} loss {1 / (i + 1):.3f}\n" for i in range(50)))
    (ws / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "loss": 1 / (i + 1)}) + "\n" for i in range(50)))
    (ws / "scores.json").write_text(json.dumps({"baseline": 0.25, "final": 0.75}))
    (ws / "metrics.png").write_bytes(_png())  # where the trainers' plot_metrics writes it
    (ws / "plots" / "loss.png").write_bytes(_png())
    s.jobs.approve(jobs[3].job_id, jobs[3].spec_hash, "bob", "fixture: approved before the page opened")
    from sqlalchemy import update

    from agent_rl_sandbox.tools.store._schema import jobs as jobs_table

    with s.store.engine.begin() as conn:
        conn.execute(update(jobs_table).where(jobs_table.c.job_id == jobs[3].job_id).values(workspace=str(ws)))
    adapter = ws / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"r": 8}')
    (adapter / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    a = s.adapters.register_candidate(
        job_id=jobs[3].job_id, behaviour="claim-before-edit", base_model="tiny-model", spec_hash=jobs[3].spec_hash,
        path=adapter, gate_report={"gate": "deploy", "passed": True, "note": HOSTILE},
    )  # fmt: skip
    yield World(s, home, jobs, good, hostile, a.adapter_id)
    s.close()
    vllm.shutdown()
    vllm.server_close()


def _png() -> bytes:
    """A valid 1x1 PNG (no imaging library)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = zlib.compress(b"\x00\x1f\x6f\xeb")
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", raw)
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def live(world):
    """The app under uvicorn on 127.0.0.1:<free port>, as `agent-rl-sandbox ui` serves it."""
    sock = bind("127.0.0.1", 0)
    config = WebConfig(port=sock.getsockname()[1], token=TOKEN, token_configured=True, approver="alice")
    srv = server(create_app(world.services, config))
    t = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.started, "uvicorn did not start"
    yield config
    srv.should_exit = True
    t.join(timeout=10)
    sock.close()

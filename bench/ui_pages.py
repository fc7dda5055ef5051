"""Benchmark: the approval page's latency per view, over real HTTP (uvicorn on loopback), against the
same data read through the services without rendering, in the same run.

- **Queue** ``GET /jobs`` with ``--jobs`` requests in the store, against ``JobRepository.list`` + views
  (what ``jobs list --json`` reads).
- **Job** ``GET /jobs/{id}``, against ``Services.job_detail`` (what ``jobs show --json`` reads).
- **Trajectory** ``GET /trajectories/{id}`` of one episode with ``--steps`` server-recorded commands,
  against ``trajectories.get`` + ``eval_score`` + ``step_diffs``.
- **Approve** ``POST /jobs/{id}/approve`` (CSRF + hash) per job, following its redirect to the job page
  (what the browser does), against ``JobService.approve`` alone.

Prints p50 and p95 in milliseconds for each view and its baseline, and the ratio. The store is SQLite
in a temp folder. Usage::

    .venv/bin/python bench/ui_pages.py [--jobs 200] [--steps 40] [--repeat 30]
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import re
import statistics
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.schemas.tools import EvalScoreInput, SandboxExecInput, SandboxFinishInput, SandboxResetInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.web import WebConfig, bind, create_app, server


def _ms(samples: list[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s) * 1000, s[min(len(s) - 1, int(len(s) * 0.95))] * 1000


def _time(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    if a.jobs < 2 * a.repeat + 1:
        ap.error("--jobs must be at least 2 * --repeat + 1 (each approval takes a fresh job)")
    tmp = Path(tempfile.mkdtemp(prefix="ui-bench-"))
    data = tmp / "data"
    data.mkdir()
    row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    (data / "sft.jsonl").write_text((json.dumps(row) + "\n") * 2)
    s = Services.build(Settings(home=tmp / "home", data_dirs=(data,), models=("tiny-model",)))
    spec = JobSpec.model_validate(
        {
            "route": "sft", "trainer": "sft", "base_model": "tiny-model",
            "dataset": {"kind": "file", "path": str(data / "sft.jsonl")},
            "gate": {"behaviour": "claim-before-edit"}, "reason": "bench",
        }
    )  # fmt: skip
    agent = Caller.agent("mcp:bench")
    jobs = [s.jobs.request(spec, agent).job for _ in range(a.jobs)]
    sb = s.sandbox.reset(SandboxResetInput(task_id="claim-before-edit"), agent).sandbox_id
    for i in range(a.steps):
        s.sandbox.exec(
            SandboxExecInput(sandbox_id=sb, command=f"echo step {i} > f{i % 5}.txt; cat f{i % 5}.txt"), agent
        )
    sid = s.sandbox.finish(SandboxFinishInput(sandbox_id=sb, message="done"), agent).session_id

    sock = bind("127.0.0.1", 0)
    cfg = WebConfig(port=sock.getsockname()[1], approver="bench")
    srv = server(create_app(s, cfg))
    threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not srv.started:
        time.sleep(0.01)
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    opener.open(cfg.url).read()
    base = f"http://127.0.0.1:{cfg.port}"

    def get(path: str) -> str:
        with opener.open(base + path) as r:
            return r.read().decode()

    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', get(f"/jobs/{jobs[0].job_id}")).group(1)
    todo = iter(jobs[: a.repeat + 1])  # +1: the warm-up call
    todo_base = iter(jobs[a.repeat + 1 : 2 * a.repeat + 1])

    def approve_web() -> None:
        j = next(todo)
        body = urllib.parse.urlencode({"csrf": csrf, "spec_hash": j.spec_hash}).encode()
        opener.open(urllib.request.Request(f"{base}/jobs/{j.job_id}/approve", data=body)).read()

    def traj_base() -> None:
        s.store.trajectories.get(sid)
        s.sandbox.eval_score(EvalScoreInput(session_id=sid))
        s.sandbox.step_diffs(sid)

    rows = [
        (f"queue ({a.jobs} jobs)", lambda: get("/jobs"),
         lambda: [s.jobs.view(j) for j in s.jobs.repo.list(limit=200)[0]]),
        ("job", lambda: get(f"/jobs/{jobs[-1].job_id}"), lambda: s.job_detail(jobs[-1].job_id)),
        (f"trajectory ({a.steps + 2} steps)", lambda: get(f"/trajectories/{sid}"), traj_base),
        ("approve", approve_web, lambda: s.jobs.approve((j := next(todo_base)).job_id, j.spec_hash, "bench")),
    ]  # fmt: skip
    print(f"{'view':28} {'page p50/p95 ms':>18} {'services p50/p95 ms':>22} {'ratio (p50)':>12}")
    for name, page, baseline in rows:
        page()
        baseline() if name != "approve" else None
        n = a.repeat
        p50, p95 = _ms(_time(page, n))
        b50, b95 = _ms(_time(baseline, n))
        print(f"{name:28} {p50:8.1f} / {p95:7.1f} {b50:10.1f} / {b95:9.1f} {p50 / b50:11.2f}x")
    srv.should_exit = True
    s.close()


if __name__ == "__main__":
    main()

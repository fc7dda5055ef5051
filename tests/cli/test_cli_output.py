"""What a first-time user read on the CLI (session 6), through the real CLI: `--version`, help that
points to the README, one word for self-report-only, human lines from `adapters`, the export's
validation verdict, `jobs reject --modify` echoing the note, `tasks show` printing the spec once,
`route` naming its own flag, and tables on an 80- or 100-column terminal (a pty) that never split
or cut an id, while piped titles never wrap mid-word."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ATIF = FIXTURES / "imports" / "atif" / "openhands__hello-world.trajectory.json"
ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
sys.path.insert(0, str(ROOT / "tests" / "tools" / "adapters"))
from fake_vllm import FakeVllm, make_adapter  # noqa: E402  (the loopback vLLM stand-in)

runner = CliRunner()


def cli(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "AGENT_RL_SANDBOX_HOME": str(home), **extra}
    env.pop("TERMINAL_WIDTH", None)
    return env


def _piped(*args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", *args],
        capture_output=True,
        text=True,
        env=_env(home, COLUMNS="80"),
        timeout=120,
    )


def _on_tty(*args: str, home: Path, columns: int) -> tuple[int, str]:
    """Run the CLI with stdout a real terminal (a pty) ``columns`` wide; its exit status and what it
    printed, colours stripped."""
    leader, follower = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "agent_rl_sandbox.cli", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=_env(home, COLUMNS=str(columns), NO_COLOR="1"),
    )
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    rc = p.wait(timeout=120)
    return rc, ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def test_version_prints_the_package_metadata_version(tmp_path):
    p = _piped("--version", home=tmp_path / "home")
    assert p.returncode == 0 and p.stdout == f"agent-rl-sandbox {version('agent-rl-sandbox')}\n", p.stdout


def test_help_points_to_the_readme_and_describes_every_export_option():
    demo = cli("demo", "--help").stdout
    assert "_train_demo" not in demo and "README" in demo
    export = cli("export", "--help").stdout
    line = next(ln for ln in export.splitlines() if "--behaviour" in ln)
    assert "Only trajectories of tasks with this behaviour" in line, line


def test_export_prints_its_validation_verdict_and_the_json_has_valid(tmp_path):
    h = ["--home", str(tmp_path / "home")]
    assert cli("import", str(ATIF), *h).exit_code == 0
    r = cli("export", "atif", "--include-unknown-tasks", *h)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "validation: valid (atif; the dataset validator found no errors)" in r.stdout
    doc = json.loads(cli("export", "atif", "--include-unknown-tasks", "--json", *h).stdout)
    assert doc["valid"] is True and doc["format"] == "atif"
    doc = json.loads(cli("export", "atif", "--include-unknown-tasks", "--json", "--no-validate", *h).stdout)
    assert doc["valid"] is None
    skipped = cli("export", "atif", "--include-unknown-tasks", "--no-validate", *h)
    assert skipped.exit_code == 0 and "validation: skipped (--no-validate)" in skipped.stdout


def test_export_of_an_invalid_file_says_invalid_and_exits_1(tmp_path, monkeypatch):
    """The verdict line is the validator's: a data file it rejects prints INVALID (and exit 1)."""
    from agent_rl_sandbox.tools import datasets
    from agent_rl_sandbox.tools.datasets import validate_file

    h = ["--home", str(tmp_path / "home")]
    assert cli("import", str(ATIF), *h).exit_code == 0
    sft = FIXTURES / "samples" / "trl" / "language_modeling_standard.jsonl"
    # the real validator, run on a file of another kind than the export's, rejects it
    monkeypatch.setattr(datasets, "validate_file", lambda path, kind: validate_file(sft, kind=kind))
    r = cli("export", "atif", "--include-unknown-tasks", *h)
    assert r.exit_code == 1 and "validation: INVALID (" in r.stdout and "invalid: " in r.stderr, r.stdout


def test_tasks_show_prints_the_reward_spec_once():
    out = cli("tasks", "show", "claim-before-edit").stdout
    assert '"reward_spec"' not in out and '"reward"' not in out.split("## reward spec")[0]
    assert out.count("## reward spec") == 1 and '"criteria"' in out


def test_route_advises_the_cli_flag_not_the_mcp_field(tmp_path):
    r = cli("route", "--behaviour", "claim-before-edit", "--home", str(tmp_path / "home"))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "pass --params for a memory estimate" in r.stdout and "pass base_model_params" not in r.stdout
    rec = json.loads(cli("route", "--behaviour", "claim-before-edit", "--json", "--home", str(tmp_path / "h")).stdout)
    assert any("pass base_model_params" in r["text"] for r in rec["reasons"])  # the MCP field name over JSON/MCP


def test_self_report_only_is_yes_everywhere(tmp_path):
    from rich.console import Console

    from agent_rl_sandbox.agents.demo import DemoResult, render_demo
    from agent_rl_sandbox.settings import Settings

    careless = DemoResult(
        agent="careless-agent",
        task_id="claim-before-edit",
        session_id="traj_311c95900d1d",
        reward=0.2,
        passed=False,
        self_report_only=True,
        failed_criteria=["verifier_passes", "claims_before_edit", "edits_within_claims", "evidence_in_final_message"],
        report_path="/r/traj_311c95900d1d.score.json",
        tool_errors=[],
        sandbox_id="sbx_1",
    )
    good = DemoResult(**{**careless.__dict__, "agent": "good-agent", "session_id": "traj_e003c8b9e5d3"})
    good.passed, good.reward, good.self_report_only, good.failed_criteria = True, 1.0, False, []
    console = Console(force_terminal=True, width=80, record=True, color_system=None)
    render_demo([good, careless], Settings(home=tmp_path / "home"), console)
    out = console.export_text()
    assert "FLAGGED" not in out and ELLIPSIS not in out
    table = [ln for ln in out.splitlines() if ln[:1] in "┏┃┡│└"]
    assert table and max(len(ln) for ln in table) <= 80  # the terminal's width, not 130 columns
    row = next(ln for ln in out.splitlines() if "careless-agent" in ln)
    assert "traj_311c95900d1d" in row and [c.strip() for c in row.split("│")[3:6]] == ["0.200", "no", "yes"]
    for name in ("verifier_passes", "claims_before_edit", "edits_within_claims", "evidence_in_final_message"):
        assert name in out  # folded onto more lines, never cut


def _register(home: Path, vllm: FakeVllm) -> str:
    """A gate-passed candidate adapter of claim-before-edit in ``home``'s store; its id."""
    from agent_rl_sandbox.schemas.jobs import JobSpec
    from agent_rl_sandbox.services import Services
    from agent_rl_sandbox.settings import Settings
    from agent_rl_sandbox.tools.jobs import JobRepository, canonical_spec, later, spec_hash

    spec = {
        "route": "sft", "trainer": "sft", "base_model": "/models/tiny",
        "dataset": {"kind": "file", "path": "/data/sft.jsonl"}, "gate": {"behaviour": "claim-before-edit"},
        "reason": "teach claiming",
    }  # fmt: skip
    s = Services.build(Settings(home=home, vllm_url=vllm.url, vllm_base_model="base-model"))
    try:
        canon = canonical_spec(JobSpec.model_validate(spec), cwd=Path("/"), dataset_sha256="b" * 64)
        job = JobRepository(s.store.engine).add(
            requester="agent-a", spec=canon, spec_hash=spec_hash(canon), expires_at=later(60),
            trainer="sft", behaviour="claim-before-edit",
        )  # fmt: skip
        a = s.adapters.register_candidate(
            job_id=job.job_id, behaviour="claim-before-edit", base_model="/models/tiny", spec_hash="h" * 64,
            path=make_adapter(home.parent / "ws" / "adapter"), gate_report={"gate": "deploy", "passed": True},
        )  # fmt: skip
    finally:
        s.close()
    return a.adapter_id


@pytest.fixture
def vllm():
    srv = FakeVllm()
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_adapters_commands_print_human_lines_and_json_on_request(tmp_path, vllm):
    """Fresh user: `adapters disable B --reason R` printed `{"adapter": null, "routes": {}}`."""
    home = tmp_path / "home"
    adapter = _register(home, vllm)
    env = {"AGENT_RL_SANDBOX_VLLM_URL": vllm.url, "AGENT_RL_SANDBOX_VLLM_BASE_MODEL": "base-model"}
    h = ["--home", str(home)]
    shown = cli("adapters", "show", adapter, *h, env=env)
    assert shown.exit_code == 0 and not shown.stdout.lstrip().startswith("{")
    assert f"adapter {adapter}" in shown.stdout and "candidate" in shown.stdout and "audit" in shown.stdout
    assert json.loads(cli("adapters", "show", adapter, "--json", *h, env=env).stdout)["adapter"]["state"] == "candidate"
    served = json.loads(cli("adapters", "show", adapter, "--json", *h, env=env).stdout)["adapter"]["served_name"]

    deployed = cli("adapters", "deploy", adapter, *h, env=env)
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    assert deployed.stdout == f"deployed {adapter}: claim-before-edit now routes to {served} (adapter {adapter})\n"
    killed = cli("adapters", "disable", "claim-before-edit", "--reason", "R", *h, env=env)
    assert killed.exit_code == 0 and killed.stdout.startswith("kill switch: claim-before-edit now routes to the base")
    assert f"(disabled {adapter})" in killed.stdout and "{" not in killed.stdout
    again = cli("adapters", "disable", "claim-before-edit", "--reason", "R", *h, env=env)
    assert "(no adapter was deployed for 'claim-before-edit')" in again.stdout and again.stderr == ""
    enabled = cli("adapters", "enable", adapter, *h, env=env)
    assert enabled.exit_code == 0 and enabled.stdout.startswith(f"enabled {adapter}: claim-before-edit now routes to")
    back = cli("adapters", "rollback", "claim-before-edit", "--json", *h, env=env)
    doc = json.loads(back.stdout)
    assert back.exit_code == 0 and doc["adapter"] is None and doc["routes"]["claim-before-edit"] == "base-model"
    listed = cli("adapters", "list", *h, env=env)
    assert adapter in listed.stdout and "route claim-before-edit -> base-model" in listed.stdout


def test_jobs_reject_modify_says_so_and_echoes_the_note(tmp_path, vllm):
    home = tmp_path / "home"
    _register(home, vllm)
    job = json.loads(cli("jobs", "list", "--json", "--home", str(home)).stdout)["jobs"][0]["job_id"]
    r = cli("jobs", "reject", job, "--modify", "--note", "use rank 8", "--home", str(home))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.stdout.startswith(f"rejected, asking for a modification, {job} by ") and "note: use rank 8" in r.stdout


def test_tables_on_a_narrow_terminal_never_split_or_cut_an_id(tmp_path, vllm):
    """Fresh user: at 80 columns `trajectories list` showed `a…`, `f…`, `0…`; at 100 `jobs list`
    split ids over two lines and cut `claim-bef…`. On a real terminal (a pty) every id is whole on
    one line, nothing is cut, and the columns a narrow terminal hides are named."""
    home = tmp_path / "home"
    _register(home, vllm)
    assert cli("import", str(ATIF), "--home", str(home)).exit_code == 0
    traj = json.loads(cli("trajectories", "list", "--json", "--home", str(home)).stdout)["trajectories"][0]
    job = json.loads(cli("jobs", "list", "--json", "--home", str(home)).stdout)["jobs"][0]
    for args, columns, ids in (
        (("trajectories", "list"), 80, [traj["session_id"]]),
        (("jobs", "list"), 100, [job["job_id"], "claim-before-edit", job["state"]]),
        (("jobs", "list"), 80, [job["job_id"], "claim-before-edit"]),
    ):
        rc, out = _on_tty(*args, home=home, columns=columns)
        assert rc == 0, out
        lines = out.splitlines()
        assert ELLIPSIS not in out and max(len(ln) for ln in lines) <= columns, out
        assert all(any(i in ln for ln in lines) for i in ids), (args, columns, out)
        assert "narrow terminal:" in out and "hidden" in out, out
    rc, wide = _on_tty("trajectories", "list", home=home, columns=200)
    assert rc == 0 and "narrow terminal" not in wide and traj["created_at"][:19] in wide


def test_piped_table_titles_never_wrap_mid_word(tmp_path):
    p = _piped("score", str(ATIF), "--task", "claim-before-edit", home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert "atif: openhands__hello-world.trajectory.json" in p.stdout.splitlines()[0]

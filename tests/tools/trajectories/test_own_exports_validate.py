"""The project's own exports pass its own validator with no error and no warning, on sandbox episodes and on
every imported fixture (Claude Code, Codex, Harbor ATIF, OpenAI chat); ``validate`` takes the kind from the
export's manifest instead of guessing (``kind_ambiguous``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app
from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.datasets import DatasetValidateInput, validate_files
from agent_rl_sandbox.tools.sandbox import BUILTIN_TASKS_DIR
from agent_rl_sandbox.tools.trajectories import ExportOptions, export_trajectories, import_file

TASK = "claim-before-edit"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
FORMATS = ("sft", "dpo", "kto", "grpo", "minimind_sft", "minimind_dpo", "minimind_agentic", "atif", "suite")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("own-exports") / "home"
    s = Services.build(Settings(home=home))
    try:
        fixed = (BUILTIN_TASKS_DIR / TASK / "solution" / "files" / "pricing.py").read_text()
        sb = s.sandbox
        good = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="good"))
        sb.claim(io.SandboxClaimInput(sandbox_id=good.sandbox_id, paths=["shopcart/pricing.py"]))
        sb.write_file(io.SandboxWriteFileInput(sandbox_id=good.sandbox_id, path="shopcart/pricing.py", content=fixed))
        sb.exec(io.SandboxExecInput(sandbox_id=good.sandbox_id, command="python -m pytest -q"))
        sb.finish(io.SandboxFinishInput(sandbox_id=good.sandbox_id, message="Ran python -m pytest -q: all passed."))
        bad = sb.reset(io.SandboxResetInput(task_id=TASK, agent_name="careless"))
        sb.write_file(io.SandboxWriteFileInput(sandbox_id=bad.sandbox_id, path="shopcart/pricing.py", content=fixed))
        sb.finish(io.SandboxFinishInput(sandbox_id=bad.sandbox_id, message="Fixed it."))
        for f in sorted(
            [*FIXTURES.glob("claude_code/*.jsonl"), *FIXTURES.glob("codex/*.jsonl"), *FIXTURES.glob("atif/**/*.json")]
            + [*FIXTURES.glob("openai_chat/*.jsonl")]
        ):
            import_file(s.store.trajectories, f)
    finally:
        s.close()
    return home


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("imports", [False, True], ids=["episodes", "with-imports"])
def test_own_export_validates_without_findings(home, tmp_path, fmt, imports):
    s = Services.build(Settings(home=home))
    try:
        opts = ExportOptions(format=fmt, include_unknown_tasks=imports, min_reward=None if imports else 1.0)
        res = export_trajectories(s.store.trajectories, opts, tmp_path / "exports")
    finally:
        s.close()
    assert res.manifest.files[0].rows > 0
    (report,) = validate_files([res.data_path])
    assert not report.errors and not report.warnings, report.text(20)
    assert set(report.kinds) == {res.manifest.files[0].kind}


def test_validate_uses_the_kind_in_the_adjacent_manifest(home, tmp_path):
    s = Services.build(Settings(home=home))
    try:
        res = export_trajectories(s.store.trajectories, ExportOptions(format="minimind_dpo"), tmp_path / "exports")
    finally:
        s.close()
    alone = tmp_path / "alone" / res.data_path.name
    alone.parent.mkdir()
    shutil.copy(res.data_path, alone)
    (guessed,) = validate_files([alone])  # without its manifest the rows also read as TRL preference rows
    assert [w.code for w in guessed.warnings] == ["kind_ambiguous"]
    r = CliRunner().invoke(app, ["validate", str(res.data_path), "--json"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    (rep,) = json.loads(r.output)
    assert rep["kinds"] == {"minimind.dpo": 1} and rep["warnings"] == []
    # a manifest that names another file, or no known kind, changes nothing
    (alone.parent / "manifest.json").write_text(json.dumps({"files": [{"path": "x.jsonl", "kind": "minimind.dpo"}]}))
    assert [w.code for w in validate_files([alone])[0].warnings] == ["kind_ambiguous"]
    (alone.parent / "manifest.json").write_text("{not json")
    assert [w.code for w in validate_files([alone])[0].warnings] == ["kind_ambiguous"]
    # the manifest must describe this content: a copy of the real one beside an edited file chooses nothing
    shutil.copy(res.manifest_path, alone.parent / "manifest.json")
    assert validate_files([alone])[0].warnings == []
    alone.write_text(
        "".join(
            json.dumps(json.loads(x), indent=None, separators=(",", ":")) + "\n" for x in alone.read_text().splitlines()
        )
    )
    assert [w.code for w in validate_files([alone])[0].warnings] == ["kind_ambiguous"]


def test_dataset_validate_and_jobs_take_the_manifest_kind_without_following_a_linked_manifest(home, tmp_path):
    """The MCP tool (and a training job's dataset check, which calls it) read the manifest as `validate` does,
    through the same no-follow opener as the data file: a manifest that is a symbolic link chooses nothing."""
    s = Services.build(Settings(home=home))
    try:
        res = export_trajectories(s.store.trajectories, ExportOptions(format="minimind_dpo"), home / "exports")
        out = s.datasets.validate(DatasetValidateInput(path=str(res.data_path)))
        assert out.verdict == "valid" and out.report.warnings == [], out.report.text(5)
        assert out.report.kinds == {"minimind.dpo": 1}
        linked = home / "exports" / "linked"
        linked.mkdir()
        shutil.copy(res.data_path, linked / res.data_path.name)
        (linked / "manifest.json").symlink_to(res.manifest_path)
        out = s.datasets.validate(DatasetValidateInput(path=str(linked / res.data_path.name)))
        assert [w.code for w in out.report.warnings] == ["kind_ambiguous"]
    finally:
        s.close()

"""The README's "Sample files to try" table says what ``validate`` answers for each sample (some
real samples are INVALID on purpose: a fresh user met those verdicts with no warning). Every
verdict and every finding code in the table is checked here against the real CLI, and the README
says up front how to reach the CLI (it lives in ``.venv``, not on ``PATH``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _sample_rows() -> list[tuple[list[Path], str]]:
    """(files, verdict column) per table row that names a sample file."""
    table = README.split("| `--kind` (export name) | sample file | `validate` verdict (why) |", 1)[1]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        names = re.findall(r"`([^`]+\.jsonl?)`", cells[1])
        if not names:
            continue
        folder = Path(names[0]).parent
        rows.append(([ROOT / (n if "/" in n else folder / n) for n in names], cells[2]))
    return rows


ROWS = _sample_rows()


def test_the_table_covers_the_samples():
    named = {f for files, _ in ROWS for f in files}
    assert len(ROWS) >= 10 and all(f.is_file() for f in named), sorted(map(str, named))
    on_disk = {p for p in (ROOT / "tests" / "fixtures" / "samples").rglob("*.json*")} - {
        ROOT / "tests/fixtures/samples/minimind/pretrain_text.jsonl"  # pretraining text: no post-training kind
    }
    assert on_disk <= named, sorted(map(str, on_disk - named))


@pytest.mark.parametrize(("files", "said"), ROWS, ids=[r[0][0].name for r in ROWS])
def test_readme_verdict_matches_validate(files, said):
    verdicts = re.findall(r"\b(OK|INVALID)\b", re.sub(r"\([^)]*\)", "", said))
    if len(verdicts) == 1:
        verdicts *= len(files)
    assert len(verdicts) == len(files), said
    found: set[str] = set()
    for f, verdict in zip(files, verdicts, strict=True):
        r = CliRunner().invoke(app, ["validate", "--json", str(f)])
        report = json.loads(r.stdout)[0]
        assert r.exit_code == (0 if verdict == "OK" else 1), (f, r.stdout)
        assert report["ok"] == (verdict == "OK"), f
        found |= set(report["error_counts_by_code"]) | set(report["warning_counts_by_code"])
    codes = {c for c in re.findall(r"`([a-z_]+)`", said) if "_" in c}
    assert codes and codes <= found if codes else not found, (said, found)


def test_set_up_says_how_to_run_the_cli_before_using_it():
    setup = README.split("## Set up and run", 1)[1].split("\n## ", 1)[0]
    first_use = setup.index("`agent-rl-sandbox serve`")  # the first command the section names after the set-up
    assert "source .venv/bin/activate" in setup[:first_use] and ".venv/bin/agent-rl-sandbox" in setup[:first_use]


def test_sample_readmes_list_only_files_that_are_here():
    """Each samples folder's README table names files of that folder (a fresh user looked for
    ``readme_examples.md`` and ``pr802/*.jsonl``, listed but never copied)."""
    for readme in (ROOT / "tests" / "fixtures" / "samples").glob("*/README.md"):
        listed = [
            name
            for line in readme.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")
            for name in re.findall(r"`([^`]+)`", line.split(" | ")[0])
        ]
        assert listed, readme
        missing = [n for n in listed if not (readme.parent / n).is_file()]
        assert not missing, (readme, missing)


def test_readme_names_the_importer_samples_that_exit_1(tmp_path):
    """The README lists the importer samples broken on purpose: ``import`` exits 1 on each of them,
    and 0 on a sample it does not list."""
    para = README.split("Five were written with broken", 1)[1].split("the others import with exit 0", 1)[0]
    broken = re.findall(r"`([a-z_]+/[^`]+\.jsonl?)`", para)
    assert len(broken) == 5, broken
    imports = ROOT / "tests" / "fixtures" / "imports"
    for name in [*broken, "atif/openhands__hello-world.trajectory.json"]:
        r = CliRunner().invoke(app, ["import", str(imports / name), "--home", str(tmp_path / "home")])
        assert r.exit_code == (1 if name in broken else 0), (name, r.stdout, r.stderr)


def test_readme_mcp_returns_name_real_output_fields():
    """Fresh user: the README said ``trajectory_start`` "returns a session_id" where the result is
    ``{"trajectory": {"session_id": ...}, "created": ...}``. The returns the README spells out are
    checked against the tools' real output schemas (``server/tools_list.json``)."""
    tools = json.loads((ROOT / "agent_rl_sandbox" / "server" / "tools_list.json").read_text(encoding="utf-8"))
    out = {t["name"]: t["outputSchema"] for t in tools["tools"]}
    start = README.split("**Logging a trajectory yourself**", 1)[1].split("; each", 1)[0]
    assert '`{"trajectory": {"session_id":' in start and '"created": true}`' in start, start
    assert {"trajectory", "created"} <= set(out["trajectory_start"]["properties"])
    traj = out["trajectory_start"]["properties"]["trajectory"]
    ref = traj.get("$ref", "").rsplit("/", 1)[-1]
    props = out["trajectory_start"]["$defs"][ref]["properties"] if ref else traj["properties"]
    assert {"session_id", "status"} <= set(props)
    row = next(line for line in README.splitlines() if line.startswith("| `sandbox_reset` |"))
    said = row.split("returns ", 1)[1].split(", and a note", 1)[0].split(", ")
    assert said and set(said) <= set(out["sandbox_reset"]["properties"]), said
    assert {"encoding", "binary"} <= set(out["sandbox_read_file"]["properties"])

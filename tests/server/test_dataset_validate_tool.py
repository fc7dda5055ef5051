"""dataset_validate through the real MCP client, and `agent-rl-sandbox validate` exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from agent_rl_sandbox.server.app import build_server
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "samples"

pytestmark = pytest.mark.anyio

GOOD_ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


@pytest.fixture
def data_services(tmp_path):
    s = Services.build(Settings(home=tmp_path / "home", data_dirs=(tmp_path / "data",)))
    yield s
    s.close()


async def test_validate_inline_rows_and_file(data_services, tmp_path):
    (tmp_path / "data").mkdir()
    bad = tmp_path / "data" / "bad.jsonl"
    bad.write_text(json.dumps(GOOD_ROW) + "\n" + '{"messages": [{"role": "user", "content": "x"}\n')
    async with Client(build_server(services=data_services)) as client:
        schema = {t.name: t.output_schema for t in (await client.list_tools()).tools}["dataset_validate"]
        ok = await client.call_tool("dataset_validate", {"rows": [GOOD_ROW, GOOD_ROW | {"x": 1}]})
        assert not ok.is_error
        jsonschema.validate(ok.structured_content, schema)
        res = await client.call_tool("dataset_validate", {"path": str(bad)})
        assert not res.is_error
        jsonschema.validate(res.structured_content, schema)
        out = res.structured_content
        assert out["verdict"] == "errors"
        assert out["report"]["errors"][0]["line"] == 2
        missing_path = str(tmp_path / "data" / "nope.jsonl")
        missing = await client.call_tool("dataset_validate", {"path": missing_path})
        assert missing.is_error and missing.structured_content is None
        text = missing.content[0].text
        assert missing_path in text and "could not be read" in text and "Next step:" in text, text
        folder = await client.call_tool("dataset_validate", {"path": str(tmp_path / "data")})
        assert folder.is_error and str(tmp_path / "data") in folder.content[0].text
        no_eval = await client.call_tool("dataset_validate", {"rows": [GOOD_ROW], "eval_path": missing_path})
        assert no_eval.is_error and f"eval_path {missing_path!r} could not be read" in no_eval.content[0].text
        both = await client.call_tool("dataset_validate", {"path": str(bad), "rows": [GOOD_ROW]})
        assert both.is_error and "exactly one" in both.content[0].text
        kind = await client.call_tool("dataset_validate", {"rows": [GOOD_ROW], "kind": "nonsense"})
        assert kind.is_error and "unknown kind" in kind.content[0].text
        assert "trl.preference" in kind.content[0].text and "dpo = trl.preference" in kind.content[0].text
        pref = json.loads((SAMPLES / "trl" / "preference.jsonl").read_text().splitlines()[0])
        alias = await client.call_tool("dataset_validate", {"rows": [pref], "kind": "dpo"})
        assert not alias.is_error and alias.structured_content["verdict"] == "valid", alias.content[0].text
        assert alias.structured_content["report"]["kinds"] == {"trl.preference": 1}
        wrong = await client.call_tool("dataset_validate", {"rows": [GOOD_ROW], "kind": "dpo"})
        assert wrong.structured_content["verdict"] == "errors"  # forced: a messages row is no preference row
        # the tool cannot be used to probe the host as the server's user
        for outside in ("/etc/shadow", str(tmp_path / "home" / "store.db"), str(tmp_path / "data" / ".." / "x.jsonl")):
            res = await client.call_tool("dataset_validate", {"path": outside})
            assert res.is_error and "outside the folders this tool may read" in res.content[0].text, outside
        leak = await client.call_tool("dataset_validate", {"rows": [GOOD_ROW], "eval_path": "/etc/passwd"})
        assert leak.is_error


def _validate_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "validate", *args], capture_output=True, text=True, timeout=120
    )


def test_export_format_names_are_the_kinds_they_write():
    """`validate --kind dpo` / `dataset_validate kind=dpo` read an export format name as the kind that
    format's file is (fresh user, session 5: the names differed and `dpo` was refused)."""
    from agent_rl_sandbox.tools.datasets import KIND_ALIASES, KINDS, canonical_kind
    from agent_rl_sandbox.tools.trajectories import FORMATS

    for name, info in FORMATS.items():
        assert canonical_kind(name) == info.kind, name
    assert set(KIND_ALIASES) == {n for n in FORMATS if n not in KINDS}
    assert all(canonical_kind(k) == k for k in KINDS) and canonical_kind("nope") is None


def test_validate_cli_takes_export_format_names_and_lists_the_kinds(tmp_path):
    pref = tmp_path / "pref.jsonl"
    pref.write_text((SAMPLES / "trl" / "preference.jsonl").read_text().splitlines()[0] + "\n")
    p = _validate_cli(str(pref), "--kind", "dpo", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert set(json.loads(p.stdout)[0]["kinds"]) == {"trl.preference"}
    p = _validate_cli(str(pref), "--kind", "preference")
    assert p.returncode == 2 and "unknown kind 'preference'" in p.stderr
    assert (
        "trl.preference" in p.stderr and "dpo = trl.preference" in p.stderr and "suite = trajectory_suite" in p.stderr
    )


def test_validate_cli_exit_codes(tmp_path):
    good = SAMPLES / "trl" / "tool_calling_sft.jsonl"
    assert _validate_cli(str(good)).returncode == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"text": "ok"}\n\xff\xfe not utf-8\n')
    p = _validate_cli(str(bad), "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout)[0]["errors"][0]["line"] == 2
    assert _validate_cli(str(tmp_path / "missing.jsonl")).returncode == 2
    assert _validate_cli(str(good), "--kind", "nope").returncode == 2

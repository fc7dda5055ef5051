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
        missing = await client.call_tool("dataset_validate", {"path": str(tmp_path / "data" / "nope.jsonl")})
        assert missing.structured_content["verdict"] == "unreadable"
        both = await client.call_tool("dataset_validate", {"path": str(bad), "rows": [GOOD_ROW]})
        assert both.is_error and "exactly one" in both.content[0].text
        kind = await client.call_tool("dataset_validate", {"rows": [GOOD_ROW], "kind": "nonsense"})
        assert kind.is_error and "unknown kind" in kind.content[0].text
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

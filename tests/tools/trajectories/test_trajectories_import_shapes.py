"""Importers on the shapes issue 11 found mishandled (fixtures in ``tests/fixtures/imports``, provenance in
its README): a Claude Code session opening with a slash command, subagents (sidechain lines and standalone
``agent-*.jsonl`` files), Codex rollouts whose content is only in ``event_msg`` records (and ones where both
twins exist), format detection that does not depend on line sizes, one error for a broken JSON document,
and trajectory times taken from the session rather than the import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.trajectories import import_file
from agent_rl_sandbox.tools.trajectories._import import detect_format

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
CC = FIXTURES / "claude_code"
SID = "b1bf397b-2cbb-46ed-bfcd-c21b81e5654b"
EVENT_ONLY = FIXTURES / "codex/rollout-2025-10-28T09-00-00-0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b.event-only.jsonl"
TWINS = FIXTURES / "codex/rollout-2026-05-23T10-18-47-019e5458-1b2c-7d3e-9f40-a1b2c3d4e5f6.twins.jsonl"


def _errors(report):
    return [p for p in report.problems if p.severity == "error"]


def test_slash_command_expansion_is_the_first_user_turn_with_the_command_in_extra(store):
    r = import_file(store.trajectories, CC / "slash-command-b1bf397b.jsonl")
    assert r.ok, r.problems
    main = store.trajectories.get(r.trajectories[0])
    first = main.steps[0]
    assert first.source == "user" and first.message.startswith("# Start Framework Project Session")
    assert first.extra == {"command": "/framework-session", "command_args": "status only"}
    # the built-in /model (caveat, command, stdout) reached no model: skipped and counted, not a turn
    assert r.skipped["local_command"] == 1 and r.skipped["meta"] == 1
    assert [s.source for s in main.steps].count("user") == 1


def test_sidechain_lines_become_a_subagent_trajectory_linked_to_its_task_call(store):
    r = import_file(store.trajectories, CC / "slash-command-b1bf397b.jsonl")
    assert len(r.trajectories) == 2 and r.skipped["sidechain:warmup"] == 1
    main, sub = (store.trajectories.get(s) for s in r.trajectories)
    assert sub.parent_session_id == main.session_id
    assert sub.external_id == f"claude-code:{SID}:agent-a5045a6" and main.external_id == f"claude-code:{SID}"
    assert sub.meta["spawned_by_call_id"] == "toolu_01Task" and sub.meta["subagent"] is True
    assert sub.agent.model_name == "claude-haiku-4-5-20251001" and main.agent.model_name.startswith("claude-opus")
    assert sub.steps[0].message.startswith("List every blocker") and sub.steps[1].tool_calls[0].function_name == "Grep"
    assert sub.final_message == "One blocker: the SiYuan API token (401). It is still open."
    # none of the subagent's steps leaked into the main conversation
    assert all(not (s.tool_calls and s.tool_calls[0].function_name == "Grep") for s in main.steps)


def test_standalone_subagent_file_links_to_the_main_session_and_its_sidecar_call(store):
    main = import_file(store.trajectories, CC / "slash-command-b1bf397b.jsonl").trajectories[0]
    r = import_file(store.trajectories, CC / SID / "subagents/agent-c0ffee1.jsonl")
    assert r.ok and len(r.trajectories) == 1 and r.steps == 3
    assert not any("see the problems above" in p.message for p in r.problems)
    sub = store.trajectories.get(r.trajectories[0])
    assert sub.parent_session_id == main and sub.external_id == f"claude-code:{SID}:agent-c0ffee1"
    assert sub.meta["spawned_by_call_id"] == "toolu_01Task2" and sub.meta["subagent_type"] == "Explore"


def test_subagent_file_before_its_main_session_imports_unlinked_with_a_warning(store):
    r = import_file(store.trajectories, CC / SID / "subagents/agent-c0ffee1.jsonl")
    assert r.ok and len(r.trajectories) == 1
    assert store.trajectories.summary(r.trajectories[0]).parent_session_id is None
    assert any("not in the store" in p.message and p.severity == "warning" for p in r.problems)


def test_warmup_only_subagent_file_is_reported_not_an_empty_error(store):
    r = import_file(store.trajectories, CC / SID / "subagents/agent-b77e21c.jsonl")
    assert r.ok and r.trajectories == [] and r.skipped["sidechain:warmup"] == 1
    assert [p.message for p in r.problems] == [
        "nothing to import: only a subagent warm-up exchange (sidechain:warmup: 1)"
    ]


def test_codex_event_msg_only_rollout_imports_turns_and_commands(store):
    r = import_file(store.trajectories, EVENT_ONLY)
    assert r.ok, r.problems
    t = store.trajectories.get(r.trajectories[0])
    assert t.agent.version == "0.46.0" and t.meta["cli_version"] == "0.46.0" and t.agent.model_name == "gpt-5-codex"
    assert [s.source for s in t.steps][:2] == ["user", "agent"]
    assert t.steps[0].message == "Run the tests, fix the failing symbol and commit."
    calls = {s.tool_calls[0].tool_call_id: s for s in t.steps if s.tool_calls}
    failing = calls["call_T1"]
    assert failing.tool_calls[0].function_name == "shell" and failing.exit_code == 101 and failing.outcome == "error"
    assert failing.tool_calls[0].arguments["command"][-1] == "cargo test --manifest-path Cargo.toml"
    assert "run_sync" in failing.observation.results[0].content
    assert calls["call_P1"].tool_calls[0].function_name == "apply_patch" and calls["call_P1"].outcome == "ok"
    assert calls["call_M1"].tool_calls[0].function_name == "mcp__github__get_issue"
    assert calls["call_M1"].tool_calls[0].arguments == {"issue": 7}
    assert calls["call_T2"].exit_code == 0  # an end event without its begin still names the call
    assert t.final_message == "Fixed: `run_sync` -> `run_blocking` in src/lib.rs; 12 tests pass."
    assert r.skipped["event_msg:agent_reasoning"] == 1 and r.skipped["event_msg:task_complete"] == 1


def test_codex_twins_are_counted_once(store):
    r = import_file(store.trajectories, TWINS)
    assert r.ok, r.problems
    t = store.trajectories.get(r.trajectories[0])
    assert [s.message for s in t.steps if s.source == "user"] == ["Print the short commit hash."]
    assert [s.message for s in t.steps if s.source == "agent" and s.message] == [
        "HEAD is 7ee251f (README.md is modified)."
    ]
    calls = [c.tool_call_id for s in t.steps for c in s.tool_calls or []]
    assert calls == ["call_rtk", "call_st"]
    results = {
        res.source_call_id: res.content for s in t.steps for res in (s.observation.results if s.observation else [])
    }
    assert results["call_rtk"].startswith("Chunk ID")  # the response_item output, not the event's copy
    assert results["call_st"] == " M README.md\n"  # no function_call_output: the end event fills it in
    assert r.missing_results == 0 and t.meta["cli_version"] == "0.128.0"
    for k in ("event_msg:user_message", "event_msg:agent_message", "event_msg:exec_command_begin"):
        assert r.skipped[k] == 1, k


def test_times_come_from_the_session_not_the_import(store):
    r = import_file(store.trajectories, EVENT_ONLY)
    s = store.trajectories.summary(r.trajectories[0])
    assert s.created_at == "2025-10-28T09:00:00.000000Z" and s.finished_at == "2025-10-28T09:00:15.100000Z"
    assert [x.session_id for x in store.trajectories.list(created_before="2025-10-29")[0]] == r.trajectories
    assert store.trajectories.list(created_after="2025-10-29")[0] == []
    cc = import_file(store.trajectories, CC / "slash-command-b1bf397b.jsonl")
    assert store.trajectories.summary(cc.trajectories[0]).created_at == "2025-11-29T22:25:50.100000Z"


def _atif(n_steps: int, big: int = 0) -> dict:
    steps = [
        {"step_id": 1, "source": "user", "message": "Say hello." + " " * big},
        *(
            {"step_id": i, "source": "agent", "message": f"hello {i}", "timestamp": f"2026-01-01T00:00:{i:02d}Z"}
            for i in range(2, n_steps + 1)
        ),
    ]
    return {
        "schema_version": "ATIF-v1.5",
        "session_id": "s-big",
        "agent": {"name": "a", "version": "1"},
        "steps": steps,
    }


@pytest.mark.parametrize("indent", [None, 2])
def test_detection_does_not_depend_on_line_size_or_layout(store, tmp_path, indent):
    doc = _atif(5, big=1_500_000)  # a 1.5 MB line, beyond any head read
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc, indent=indent))
    assert detect_format(path, path.read_bytes()) == "atif"
    r = import_file(store.trajectories, path)
    assert r.ok and r.steps == 5
    jsonl = tmp_path / "big.jsonl"
    jsonl.write_text(json.dumps(doc) + "\n" + json.dumps({**doc, "session_id": "s2"}) + "\n")
    assert detect_format(jsonl, jsonl.read_bytes()) == "atif"
    # a Claude Code transcript whose first line is over 1 MB
    cc = tmp_path / "cc.jsonl"
    first = {"type": "user", "sessionId": "x", "uuid": "u", "message": {"role": "user", "content": "a" * 1_200_000}}
    cc.write_text(json.dumps(first) + "\n")
    assert detect_format(cc, cc.read_bytes()) == "claude_code"
    # a pretty-printed record of a line format
    pretty = tmp_path / "chat.json"
    pretty.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}, indent=2)
    )
    assert detect_format(pretty, pretty.read_bytes()) == "openai_chat"
    assert import_file(store.trajectories, pretty).steps == 2


def test_a_broken_json_document_gets_one_error_with_line_and_column(store, tmp_path):
    text = json.dumps(_atif(4), indent=2).splitlines()
    text[6] = text[6] + " oops"
    path = tmp_path / "broken.json"
    path.write_text("\n".join(text))
    with pytest.raises(ActionError, match=r"not valid JSON: .* at line 7 column \d+"):
        import_file(store.trajectories, path)
    r = import_file(store.trajectories, path, format="atif")
    assert len(r.problems) == 1 and r.problems[0].line == 7
    assert "at line 7 column" in r.problems[0].message and not r.ok
    # JSON Lines with one torn line still report that line alone, and import the rest
    lines = tmp_path / "two.jsonl"
    lines.write_text(json.dumps(_atif(3)) + "\n" + '{"schema_version": "ATIF-v1.5", "ste\n')
    r2 = import_file(store.trajectories, lines)
    assert len(r2.trajectories) == 1 and [p.line for p in _errors(r2)] == [2]


def test_cli_says_how_many_subagents_were_imported_and_which_were_not(tmp_path):
    from typer.testing import CliRunner

    from agent_rl_sandbox.cli import app

    r = CliRunner().invoke(
        app, ["import", str(CC / "slash-command-b1bf397b.jsonl"), "--home", str(tmp_path / "h")], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    assert "2 trajectories (1 of them a subagent)" in r.output
    assert "subagent lines not imported: sidechain:warmup 1" in r.output


def _split_main_and_subagent(tmp_path):
    """The slash-command session as Claude Code 2.0 lays it out on disk: the main transcript without its
    sidechain lines, and the subagent's lines in ``agent-a5045a6.jsonl`` (no ``.meta.json`` sidecar)."""
    lines = [json.loads(x) for x in (CC / "slash-command-b1bf397b.jsonl").read_text().splitlines()]
    main = tmp_path / f"{SID}.jsonl"
    main.write_text("".join(json.dumps(x) + "\n" for x in lines if not x.get("isSidechain")))
    sub = tmp_path / "agent-a5045a6.jsonl"
    sub.write_text("".join(json.dumps(x) + "\n" for x in lines if x.get("agentId") == "a5045a6"))
    return main, sub


def test_subagent_file_without_sidecar_finds_its_task_call_by_prompt(store, tmp_path):
    main, sub = _split_main_and_subagent(tmp_path)
    m = import_file(store.trajectories, main)
    s = import_file(store.trajectories, sub)
    assert s.ok and s.subagents == s.trajectories
    t = store.trajectories.summary(s.trajectories[0])
    assert t.parent_session_id == m.trajectories[0]
    assert store.trajectories.get(s.trajectories[0]).meta["spawned_by_call_id"] == "toolu_01Task"


def test_cli_imports_subagent_files_after_their_main_session(tmp_path):
    from typer.testing import CliRunner

    from agent_rl_sandbox.cli import app
    from agent_rl_sandbox.tools.store import Store

    main, sub = _split_main_and_subagent(tmp_path)
    home = tmp_path / "h"
    r = CliRunner().invoke(app, ["import", str(sub), str(main), "--home", str(home), "--json"])
    assert r.exit_code == 0, r.output
    reports = json.loads(r.output)
    assert [Path(x["file"]).name for x in reports] == [main.name, sub.name]
    st = Store(f"sqlite:///{home / 'store.db'}")
    try:
        assert st.trajectories.summary(reports[1]["subagents"][0]).parent_session_id == reports[0]["trajectories"][0]
    finally:
        st.close()


def test_export_since_until_filter_by_when_the_work_happened(tmp_path):
    from typer.testing import CliRunner

    from agent_rl_sandbox.cli import app

    home = ["--home", str(tmp_path / "h")]
    run = CliRunner().invoke
    assert run(app, ["import", str(EVENT_ONLY), *home]).exit_code == 0
    out = ["--out", str(tmp_path / "x"), "--include-unknown-tasks", *home]
    hit = run(app, ["export", "atif", "--since", "2025-10-28", "--until", "2025-10-29", *out])
    assert hit.exit_code == 0 and "1 row from 1 trajectory" in hit.output, hit.output
    miss = run(app, ["export", "atif", "--since", "2026-01-01", *out])
    assert miss.exit_code == 1 and "selected=0" in miss.output, miss.output  # imported today, worked in 2025


def test_claude_thinking_is_exported_as_atif_reasoning_content(store):
    from agent_rl_sandbox.tools.formats.atif import write_document

    r = import_file(store.trajectories, FIXTURES / "claude_code/session-7f3c1a52.jsonl")
    doc = write_document(store.trajectories.get(r.trajectories[0]))
    step = doc["steps"][1]
    assert "pricing module first" in step["reasoning_content"] and "reasoning_content" not in step["extra"]

"""Importers on realistic samples of each format: bad lines are reported with file and line and the rest
imports; calls without results become failed steps; ATIF pairing errors reject the trajectory; secrets
are redacted and counted; a non-empty file that yields nothing is an error; re-imports add nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.trajectories import ExportOptions, export_trajectories, import_file
from agent_rl_sandbox.tools.trajectories._import import detect_format

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"


def _problems(report, severity="error"):
    return [(p.line, p.path, p.message) for p in report.problems if p.severity == severity]


def _all_text(store, sids) -> str:
    return " ".join(store.trajectories.get(s).model_dump_json() for s in sids)


def test_claude_code_transcript(store):
    path = FIXTURES / "claude_code/session-7f3c1a52.jsonl"
    r = import_file(store.trajectories, path)
    assert r.format == "claude_code" and len(r.trajectories) == 1
    errors = _problems(r)
    assert errors == [(18, None, errors[0][2])] and "not JSON" in errors[0][2]  # the torn line, by number
    assert any(line == 22 and "future-line-kind" in msg for line, _, msg in _problems(r, "warning"))
    assert all(p.file == str(path) for p in r.problems)
    assert r.skipped == {
        "file-history-snapshot": 1,
        "sidechain:no_agent_step": 1,  # a subagent prompt with no answer: counted, not a trajectory
        "summary": 1,
        "system:compact_boundary": 1,
        "unknown:future-line-kind": 1,
    }
    t = store.trajectories.get(r.trajectories[0])
    assert t.external_id == "claude-code:7f3c1a52-9d4e-4b8a-a1f0-3e5c2d9b8a71" and t.origin == "import:claude_code"
    assert t.agent.name == "claude-code" and t.agent.model_name == "claude-sonnet-4-5" and t.status == "finished"
    assert all(s.provenance == "agent" for s in t.steps)
    # One assistant message split over three lines is one step; parallel tool uses stay in one step.
    read = t.steps[1]
    assert read.message == "Let me read the pricing module." and read.tool_calls[0].function_name == "Read"
    assert "pricing module first" in read.extra["reasoning_content"] and read.metrics["prompt_tokens"] == 1200
    parallel = t.steps[2]
    assert [c.function_name for c in parallel.tool_calls] == ["Edit", "Bash"] and parallel.outcome == "error"
    assert [r.source_call_id for r in parallel.observation.results] == ["toolu_01Edit", "toolu_01Bash"]
    # The interrupted call has no result: a failed step, never an invented observation.
    cancelled = t.steps[3]
    assert cancelled.outcome == "error" and cancelled.observation is None
    assert cancelled.extra["missing_result"] is True and r.missing_results == 1
    assert t.steps[4].extra == {"event": "interrupt"}
    assert t.final_message.startswith("Fixed: discounted()")
    assert r.redactions == {"aws-access-key": 1} and "AKIAIOSFODNN7EXAMPLE" not in _all_text(store, r.trajectories)


def test_codex_rollout(store):
    r = import_file(store.trajectories, FIXTURES / "codex/rollout-2026-11-21T10-00-00-019a2d7a.jsonl")
    assert r.format == "codex"
    assert [(line, "not JSON" in msg) for line, _, msg in _problems(r)] == [(10, True)]
    assert any(line == 20 and "ghost_snapshot" in msg for line, _, msg in _problems(r, "warning"))
    assert r.skipped["reasoning"] == 1 and r.skipped["event_msg:token_count"] == 1 and r.skipped["compacted"] == 1
    t = store.trajectories.get(r.trajectories[0])
    assert t.agent.name == "codex" and t.agent.model_name == "gpt-5-codex" and t.agent.version == "0.65.0"
    by_tool = {s.tool_calls[0].function_name + str(i): s for i, s in enumerate(t.steps) if s.tool_calls}
    shell_ok = by_tool["shell2"]
    assert (
        shell_ok.outcome == "ok"
        and shell_ok.exit_code == 0
        and shell_ok.observation.results[0].content.startswith("test_cart.py")
    )
    assert by_tool["apply_patch3"].tool_calls[0].arguments["input"].startswith("*** Begin Patch")
    failing = by_tool["shell4"]
    assert failing.message.startswith("Running the tests") and failing.exit_code == 1 and failing.outcome == "error"
    aborted = by_tool["shell5"]
    assert aborted.extra["missing_result"] is True and aborted.observation is None
    assert r.redactions == {"basic-auth-credentials": 1} and "s3cretIndexPass" not in _all_text(store, r.trajectories)
    assert t.steps[0].source == "system" and t.steps[0].extra == {"context": "environment"}


def test_openai_chat_logs_and_real_fine_tuning_rows(store):
    r = import_file(store.trajectories, FIXTURES / "openai_chat/chat_logs.jsonl")
    assert r.format == "openai_chat" and len(r.trajectories) == 2
    assert [line for line, _, _ in _problems(r)] == [3, 4]
    assert any("encoded twice" in msg for _, _, msg in _problems(r, "warning"))
    release = store.trajectories.get(r.trajectories[0])
    push = release.steps[3].tool_calls[0].arguments
    assert push["args"][0] == "push" and "[REDACTED:" in push["args"][1] and "ghp_" not in json.dumps(push)
    assert release.agent.tool_definitions[0]["function"]["name"] == "run_git"
    assert store.trajectories.get(r.trajectories[1]).agent.model_name == "gpt-4.1-mini-2025-04-14"
    drone = import_file(store.trajectories, FIXTURES / "openai_chat/openai-cookbook__drone_training.first2.jsonl")
    assert drone.ok and len(drone.trajectories) == 2 and drone.missing_results == 2
    weights = import_file(store.trajectories, FIXTURES / "openai_chat/multi_turn_weight.from-docs.jsonl")
    assert weights.ok and [
        s.extra.get("weight") for s in store.trajectories.get(weights.trajectories[0]).steps if s.source == "agent"
    ] == [0, 1]


def test_atif_files_and_pairing_errors(store):
    real = import_file(store.trajectories, FIXTURES / "atif/openhands__hello-world.trajectory.json")
    assert real.ok and real.steps == 6 and real.missing_results == 1
    t = store.trajectories.get(real.trajectories[0])
    assert t.agent.name == "openhands" and len(t.agent.tool_definitions) == 6
    assert t.steps[-1].outcome == "error" and t.steps[-1].extra["unanswered_call_ids"] == ["call_fake_2"]
    mixed = import_file(store.trajectories, FIXTURES / "atif/mixed.atif.jsonl")
    assert len(mixed.trajectories) == 1  # only the sound trajectory imports
    errors = _problems(mixed)
    assert (2, "$.steps[0]", "duplicate tool_call_id 'c1' in one step") in errors
    assert (3, "$.steps[0]", "observation result points at call 'c9', which is not a tool call of this step") in errors
    assert any(line == 4 and "not JSON" in msg for line, _, msg in errors)
    good = store.trajectories.get(mixed.trajectories[0])
    assert good.split == "heldout" and good.task_id == "list-files"  # a file's "held out" is kept
    assert good.reward is None and good.meta["claimed_reward"] == 1.0  # a file's reward is not trusted


def test_a_non_empty_file_with_no_steps_is_an_error(store, tmp_path):
    r = import_file(store.trajectories, FIXTURES / "claude_code/only-summaries.jsonl")
    assert not r.ok and r.steps == 0 and "no steps imported" in r.problems[-1].message
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b'{"messages": 5}\n\xff\xfe not utf8\n')
    g = import_file(store.trajectories, garbage, format="openai_chat")
    assert not g.ok and {p.line for p in g.problems if p.line} == {1, 2}
    prose = tmp_path / "notes.txt"
    prose.write_text("not a trajectory\n")
    with pytest.raises(ActionError, match="cannot tell the format.*no line is JSON"):
        import_file(store.trajectories, prose)


@pytest.mark.parametrize(
    ("content", "why", "fix"),
    [
        (b"", "the file is empty", "nothing to import"),
        (b"  \n\n", "the file is empty", "nothing to import"),
        (b'{"a": 1}\n\xff\xfe{"b": 2}\n', "not UTF-8 (byte 0xff at offset 9)", "or pass --format"),
        (b'{"a": 1}\n', "", "pass --format (one of"),
    ],
)
def test_an_undetectable_file_says_why(store, tmp_path, content, why, fix):
    f = tmp_path / "in.jsonl"
    f.write_bytes(content)
    with pytest.raises(ActionError) as e:
        import_file(store.trajectories, f)
    assert e.value.message == f"cannot tell the format of {f}" + (f": {why}" if why else "")
    assert fix in e.value.hint


def test_reimport_adds_nothing_and_a_changed_file_links_to_the_earlier_import(store, tmp_path):
    src = FIXTURES / "codex/rollout-2026-11-21T10-00-00-019a2d7a.jsonl"
    first = import_file(store.trajectories, src)
    again = import_file(store.trajectories, src)
    assert again.trajectories == [] and again.already_imported == first.trajectories and again.steps == 0
    grown = tmp_path / "rollout.jsonl"
    grown.write_text(
        src.read_text()
        + json.dumps(
            {
                "timestamp": "2026-11-21T10:01:00Z",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Now fix it."}],
                },
            }
        )
        + "\n"
    )
    later = import_file(store.trajectories, grown)
    assert (
        len(later.trajectories) == 1
        and store.trajectories.summary(later.trajectories[0]).parent_session_id == first.trajectories[0]
    )


def test_exported_atif_imports_back(store, tmp_path):
    src = import_file(store.trajectories, FIXTURES / "claude_code/session-7f3c1a52.jsonl").trajectories[0]
    res = export_trajectories(
        store.trajectories, ExportOptions(format="atif", include_unknown_tasks=True), tmp_path / "exports"
    )
    back = import_file(store.trajectories, res.data_path)
    assert back.ok and len(back.trajectories) == 1
    a, b = store.trajectories.get(src), store.trajectories.get(back.trajectories[0])
    assert [s.message for s in a.steps] == [s.message for s in b.steps]
    assert [[c.model_dump() for c in s.tool_calls or []] for s in a.steps] == [
        [c.model_dump() for c in s.tool_calls or []] for s in b.steps
    ]
    assert [s.outcome for s in a.steps] == [s.outcome for s in b.steps]


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("claude_code/session-7f3c1a52.jsonl", "claude_code"),
        ("codex/rollout-2026-11-21T10-00-00-019a2d7a.jsonl", "codex"),
        ("openai_chat/chat_logs.jsonl", "openai_chat"),
        ("atif/mixed.atif.jsonl", "atif"),
        ("atif/openhands__hello-world.trajectory.json", "atif"),
    ],
)
def test_format_detection(name, fmt):
    path = FIXTURES / name
    assert detect_format(path, path.read_bytes()) == fmt


@pytest.mark.parametrize(
    "rel", ["claude_code/session-7f3c1a52.jsonl", "codex/rollout-2026-11-21T10-00-00-019a2d7a.jsonl"]
)
def test_import_with_the_collector_paused_stores_what_it_stored_before(rel, tmp_path, monkeypatch):
    """issue 16: ``import_file`` pauses the cyclic GC (1.75x at 20k steps); the same report and the same
    stored trajectories as with the collector running, and the collector is back on afterwards."""
    import contextlib
    import gc

    import agent_rl_sandbox.tools.trajectories._import as importer
    from agent_rl_sandbox.tools.store import Store

    def run(home: Path, pause: bool) -> tuple[dict, list[dict]]:
        if not pause:
            monkeypatch.setattr(importer, "paused_gc", contextlib.nullcontext)
        store = Store(f"sqlite:///{home}/store.db")
        try:
            r = import_file(store.trajectories, FIXTURES / rel)
            trajs = [
                store.trajectories.get(s).model_dump(exclude={"created_at", "finished_at", "session_id"})
                for s in r.trajectories
            ]
        finally:
            store.close()
            monkeypatch.undo()
        report = r.model_dump(exclude={"trajectories"})
        return report, [
            {**t, "steps": [{k: v for k, v in s.items() if k != "timestamp"} for s in t["steps"]]} for t in trajs
        ]

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert gc.isenabled()
    paused = run(tmp_path / "a", True)
    assert gc.isenabled()
    assert paused == run(tmp_path / "b", False)

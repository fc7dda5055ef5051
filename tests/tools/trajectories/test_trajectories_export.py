"""Training exports: every format passes the project's dataset validator and loads with ``datasets``;
held-out task variants never reach a training export; no tool result is ever made up; manifests account
for every trajectory."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from trajectory_factory import INSTRUCTION, call, sandbox_trajectory

from agent_rl_sandbox.tools.datasets import validate_file
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.trajectories import FORMATS, ExportOptions, export_trajectories, import_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
TRAINING = [f for f, info in FORMATS.items() if info.training]
REGISTRY = {"claim-before-edit": "train", "claim-before-edit/heldout": "heldout", "secretly-heldout": "heldout"}


def task_split(task_id: str) -> str | None:
    return REGISTRY.get(task_id)


@pytest.fixture
def populated(store):
    """Passing and failing sandbox episodes of one task, cancelled runs, held-out variants (stored as such,
    and stored as train but held out in the registry), and imported sessions without a task."""
    ids = {
        "pass": sandbox_trajectory(store, passed=True),
        "fail": sandbox_trajectory(store, passed=False, content="def discounted(p, d):\n    return p\n"),
        "pass_cancelled": sandbox_trajectory(store, passed=True, cancel=True),
        "fail_cancelled_first": sandbox_trajectory(store, passed=False, cancel_first=True),
        "low_reward": sandbox_trajectory(store, passed=True, reward=0.5),
        "heldout": sandbox_trajectory(store, task_id="claim-before-edit/heldout", split="heldout", passed=True),
        "heldout_fail": sandbox_trajectory(store, task_id="claim-before-edit/heldout", split="heldout", passed=False),
        "registry_heldout": sandbox_trajectory(store, task_id="secretly-heldout", split="train", passed=True),
        "running": sandbox_trajectory(store, passed=None, finish=False),
    }
    for f in ("claude_code/session-7f3c1a52.jsonl", "atif/openhands__hello-world.trajectory.json"):
        ids[f] = import_file(store.trajectories, FIXTURES / f).trajectories[0]
    return ids


def _export(store, tmp_path, fmt, **kw):
    kw.setdefault("min_reward", None if fmt == "sft" else 1.0)
    return export_trajectories(
        store.trajectories, ExportOptions(format=fmt, **kw), tmp_path / "exports", task_split=task_split
    )


def _rows(res) -> list:
    text = res.data_path.read_text(encoding="utf-8")
    return [json.loads(text)] if res.data_path.suffix == ".json" else [json.loads(x) for x in text.splitlines()]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_validates_and_loads_with_datasets(store, populated, tmp_path, fmt):
    import datasets

    res = _export(store, tmp_path, fmt)
    m = res.manifest
    assert m.rows == len(_rows(res)) > 0
    report = validate_file(res.data_path, kind=FORMATS[fmt].kind)
    assert report.ok, [(e.line, e.json_path, e.code, e.message) for e in report.errors]
    ds = datasets.load_dataset("json", data_files=str(res.data_path), split="train", cache_dir=str(tmp_path / "hf"))
    assert len(ds) == m.rows
    # The manifest accounts for the data: file hash, combined hash, sources, filters, counts.
    digest = hashlib.sha256(res.data_path.read_bytes()).hexdigest()
    assert m.files[0].sha256 == digest
    assert m.sha256 == hashlib.sha256(f"{m.files[0].path} {digest}\n".encode()).hexdigest()
    assert json.loads(res.manifest_path.read_text())["export_id"] == m.export_id
    assert m.source_session_ids == sorted(m.source_session_ids) and m.source_session_ids
    assert m.filters["min_reward"] == (None if fmt == "sft" else 1.0)
    assert m.counts["considered"] == len(populated)
    assert m.counts["skipped_running"] == 1


@pytest.mark.parametrize("fmt", TRAINING)
def test_heldout_variants_never_reach_a_training_export(store, populated, tmp_path, fmt):
    held = {populated["heldout"], populated["heldout_fail"], populated["registry_heldout"]}
    res = _export(store, tmp_path, fmt)
    assert not held & set(res.manifest.source_session_ids)
    assert res.manifest.counts["skipped_heldout"] == 3
    text = res.data_path.read_text()
    assert "claim-before-edit/heldout" not in text and "secretly-heldout" not in text
    with pytest.raises(ActionError, match="training format"):
        _export(store, tmp_path, fmt, include_heldout=True)


def test_evaluation_formats_include_heldout_only_on_request(store, populated, tmp_path):
    held = {populated["heldout"], populated["heldout_fail"], populated["registry_heldout"]}
    plain = _export(store, tmp_path, "atif")
    assert not held & set(plain.manifest.source_session_ids)
    asked = _export(store, tmp_path, "atif", include_heldout=True)
    assert held <= set(asked.manifest.source_session_ids)
    suite = _export(store, tmp_path, "suite", include_heldout=True)
    assert "claim-before-edit/heldout" in {t["id"] for t in _rows(suite)[0]["tasks"]}


def test_sft_rows_follow_trl_with_json_string_arguments_and_no_made_up_results(store, populated, tmp_path):
    res = _export(store, tmp_path, "sft", min_reward=1.0)
    assert set(res.manifest.source_session_ids) == {populated["pass"], populated["pass_cancelled"]}
    counts = res.manifest.counts
    assert counts["skipped_below_min_reward"] == 3  # the failures and the 0.5 reward
    assert counts["skipped_unknown_task"] == 2  # imports name no task: left out before their (missing) reward
    assert counts["truncated_missing_result"] == 1
    for row in _rows(res):
        tools = json.loads(row["tools"])
        declared = {t["function"]["name"] for t in tools}
        msgs = row["messages"]
        assert msgs[0] == {"role": "user", "content": INSTRUCTION}
        assert msgs[-1]["role"] == "assistant"
        pending: set[str] = set()
        for m in msgs:
            if m["role"] == "assistant":
                assert not pending, "a tool call got no tool message before the conversation moved on"
                assert m["content"] == ""  # server steps carry no free text of the agent
                for c in m.get("tool_calls") or []:
                    assert isinstance(c["function"]["arguments"], str)
                    json.loads(c["function"]["arguments"])
                    assert c["function"]["name"] in declared
                    assert "sandbox_id" not in json.loads(c["function"]["arguments"])
                    pending.add(c["id"])
            elif m["role"] == "tool":
                pending.remove(m["tool_call_id"])
        assert "self-reported note" not in json.dumps(msgs)  # self-logged steps are left out next to server steps
    cancelled = [r for r in _rows(res) if len(r["messages"]) < 8]
    assert len(cancelled) == 1  # cut before the call that never returned: no result was invented
    assert "Running the tests now." not in json.dumps(cancelled[0])  # server step text is never used


def test_trajectory_with_only_a_cancelled_call_is_dropped_and_counted(store, tmp_path):
    sid = sandbox_trajectory(store, passed=True, cancel_first=True)
    assert store.trajectories.get(sid).steps[1].outcome == "unknown"
    with pytest.raises(ActionError, match="dropped_missing_result=1"):
        _export(store, tmp_path, "sft", min_reward=1.0)


def test_cancelled_call_in_an_import_is_cut_with_its_text_kept(store, tmp_path):
    sid = import_file(store.trajectories, FIXTURES / "atif/openhands__hello-world.trajectory.json").trajectories[0]
    res = _export(store, tmp_path, "sft", min_reward=None, include_unknown_tasks=True)
    assert res.manifest.source_session_ids == [sid]
    msgs = _rows(res)[0]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant"]
    assert msgs[-1] == {"role": "assistant", "content": "All done! What's next on the agenda?"}  # no `finish` call left
    assert [c["function"]["name"] for m in msgs for c in m.get("tool_calls") or []] == ["str_replace_editor"]
    tools = {t["function"]["name"] for t in json.loads(_rows(res)[0]["tools"])}
    assert {"execute_bash", "str_replace_editor", "finish"} <= tools  # the agent's own tool definitions


def test_dpo_pairs_share_the_task_variant_and_prompt(store, populated, tmp_path):
    res = _export(store, tmp_path, "dpo")
    rows = _rows(res)
    assert len(rows) == 1  # (pass, fail) pairs; (pass_cancelled, fail_cancelled_first) is dropped
    assert set(res.manifest.source_session_ids) == {populated["pass"], populated["fail"]}
    assert res.manifest.counts["pairs_dropped"] == 1
    row = rows[0]
    assert row["prompt"] == [{"role": "user", "content": INSTRUCTION}]
    assert row["chosen"][0]["role"] == "assistant" and row["rejected"][0]["role"] == "assistant"
    assert row["chosen"] != row["rejected"]
    mm = _export(store, tmp_path, "minimind_dpo")
    pair = _rows(mm)[0]
    assert pair["chosen"][:-1] == pair["rejected"][:-1]  # step-level: history shared, last assistant turn differs
    assert "round(price" in pair["chosen"][-1]["content"] and "return p\\n" in pair["rejected"][-1]["content"]


def test_kto_labels_and_grpo_prompts_carry_the_task(store, populated, tmp_path):
    kto = _rows(_export(store, tmp_path, "kto"))
    assert sorted(r["label"] for r in kto) == [False, True, True, True]
    grpo = _rows(_export(store, tmp_path, "grpo"))
    assert grpo == [
        {
            "prompt": [{"role": "user", "content": INSTRUCTION}],
            "task_id": "claim-before-edit",
            "behaviour": "claim-before-edit",
        }
    ]
    agentic = _rows(_export(store, tmp_path, "minimind_agentic"))
    assert agentic[0]["gt"] == ["claim-before-edit"] and agentic[0]["conversations"][-1]["content"] == "无"


def test_export_redacts_secrets_stored_before_redaction_existed(store, tmp_path):
    sid = sandbox_trajectory(store, passed=True, finish=False)
    store.trajectories.log_steps(
        sid, [call("sandbox_exec", {"command": "echo AKIAIOSFODNN7EXAMPLE"}, "AKIAIOSFODNN7EXAMPLE")], redact=False
    )
    store.trajectories.finish(sid, reward=1.0, passed=True)
    # SFT ends at the last call (its trailing result is not a training target); ATIF keeps both.
    for fmt, n in (("sft", 1), ("atif", 2)):
        res = _export(store, tmp_path, fmt, min_reward=1.0)
        assert "AKIAIOSFODNN7EXAMPLE" not in res.data_path.read_text()
        assert res.manifest.redactions == {"aws-access-key": n}


def test_an_export_with_no_rows_says_why(store, tmp_path):
    sandbox_trajectory(store, passed=False)
    with pytest.raises(ActionError, match="skipped_below_min_reward=1"):
        _export(store, tmp_path, "sft", min_reward=1.0)
    assert not list((tmp_path / "exports").iterdir())  # nothing half-written is left behind


def test_suite_export_is_a_port_daddy_suite_the_scorer_reads(store, populated, tmp_path):
    from agent_rl_sandbox.schemas.reward import PortDaddySuite

    res = _export(store, tmp_path, "suite")
    suite = PortDaddySuite.model_validate(_rows(res)[0])
    task = next(t for t in suite.tasks if t.id == "claim-before-edit")
    assert task.instruction == INSTRUCTION
    attempt = next(t for t in suite.trajectories if t.session_id == populated["pass"])
    assert [a.tool for a in attempt.actions][:2] == ["sandbox_read_file", "sandbox_claim"]
    assert all(getattr(a, "provenance", "server") == "server" for a in attempt.actions)  # self-logged left out
    assert any(a.command == "python -m pytest -q" and a.exit_code == 0 for a in attempt.artifacts)


def test_suite_export_of_a_command_without_an_exit_code_validates(store, tmp_path):
    """A self-logged command has no exit code: the export leaves ``exitCode`` out rather than writing
    null, which Port Daddy reads as 0 (so the validator, and score, refuse it)."""
    t = store.trajectories.start(agent={"name": "self-logger"}, task_id="claim-before-edit", split="train")
    store.trajectories.log_steps(t.session_id, [call("bash", {"command": "pytest -q"}, "3 passed", provenance="agent")])
    store.trajectories.finish(t.session_id, final_message="ran the tests", reward=1.0, passed=True)
    res = _export(store, tmp_path, "suite")
    # (the store's verdict travels as a second, store_verdict artifact: issue 10 §5)
    [art] = [a for traj in _rows(res)[0]["trajectories"] for a in traj["artifacts"] if a["kind"] != "store_verdict"]
    assert art == {"kind": "command", "command": "pytest -q", "output": "3 passed"}
    report = validate_file(res.data_path, kind="trajectory_suite")
    assert report.ok, [(e.json_path, e.code, e.message) for e in report.errors]

"""Reports: bounded, complete counts, full report on disk, exit codes, progress, summary, tokens, leakage."""

from __future__ import annotations

import json

import pytest

from agent_rl_sandbox.tools.datasets import (
    Finding,
    ValidationReport,
    estimate_tokens,
    validate_file,
    validate_files,
    validate_rows,
)
from agent_rl_sandbox.tools.errors import ActionError

U = {"role": "user", "content": "What is the capital of France?"}
A = {"role": "assistant", "content": "Paris."}


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_100k_bad_lines_give_a_bounded_readable_report(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": \n' * 50_000 + b'{"foo": 1}\n' * 50_000)
    report = validate_file(path, max_errors=20)
    assert report.error_count == 100_000
    assert report.error_counts_by_code == {"invalid_json": 50_000, "unknown_kind": 50_000}
    assert len(report.errors) == 20 and report.truncated
    assert len(report.model_dump_json()) < 20_000
    lines = open(report.full_report_path, encoding="utf-8").read().splitlines()
    assert len(lines) == report.error_count + report.warning_count
    first = Finding.model_validate_json(lines[0])
    assert first.line == 1 and first.code == "invalid_json"


def test_counts_are_complete_when_lists_are_cut():
    report = validate_rows([{"text": ""}] * 30 + [{"prompt": "p", "completion": ""}] * 5, max_errors=3)
    assert report.error_counts_by_code["empty_text"] == 30
    assert report.error_counts_by_code["empty_completion"] == 5
    assert len(report.errors) == 3 and report.truncated and report.full_report_path


def test_report_path_always_gets_every_finding(tmp_path):
    out = tmp_path / "out" / "findings.jsonl"
    report = validate_rows([{"text": ""}, {"text": "ok"}, {"text": "ok"}], report_path=out)
    assert report.full_report_path == str(out) and not report.truncated
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["code"], r["severity"]) for r in recs} == {("empty_text", "error"), ("duplicate_row", "warning")}


def test_exit_codes(tmp_path):
    good = write_rows(tmp_path / "good.jsonl", [{"text": "a"}])
    bad = write_rows(tmp_path / "bad.jsonl", [{"text": ""}])
    assert validate_file(good).exit_code == 0
    assert validate_file(bad).exit_code == 1
    assert validate_file(tmp_path / "missing.jsonl").exit_code == 2
    dumped = json.loads(validate_file(bad).model_dump_json())
    assert dumped["exit_code"] == 1 and dumped["ok"] is False
    assert ValidationReport.model_json_schema(mode="serialization")["properties"]["exit_code"]["readOnly"] is True


def test_progress_is_reported_in_bytes_up_to_the_file_size(tmp_path):
    path = write_rows(tmp_path / "big.jsonl", [{"text": "x" * 1000 + str(i)} for i in range(3000)])
    seen = []
    validate_file(path, progress=lambda done, total: seen.append((done, total)))
    size = path.stat().st_size
    assert len(seen) >= 3
    assert all(t == size for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == size
    rows_seen = []
    validate_rows([{"text": str(i)} for i in range(250)], progress=lambda d, t: rows_seen.append((d, t)))
    assert rows_seen[-1] == (250, 250)


def test_summary_counts_roles_tools_lengths_and_styles(tmp_path):
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    call = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "lookup", "arguments": {}}}]}
    rows = [
        {"messages": [U, call, {"role": "tool", "content": "r"}, A], "tools": [tool]},
        {"messages": [U, {"role": "assistant", "content": "x" * 5000}]},
    ]
    report = validate_rows(rows)
    s = report.summary
    assert s.roles == {"assistant": 3, "user": 2, "tool": 1}
    assert s.tool_calls == {"lookup": 1} and s.rows_with_tools == 1 and s.rows_with_tool_calls == 1
    assert s.length_chars.count == 2 and s.length_chars.max == len(U["content"]) + 5000
    assert s.styles == {"conversational": 2}
    assert report.kinds == {"trl.language_modeling": 2}


def test_length_percentiles():
    rows = [{"prompt": "p", "completion": "c" * n} for n in range(1, 101)]
    stats = validate_rows(rows).summary.length_chars
    assert (stats.p50, stats.p90, stats.p99, stats.max) == (51, 91, 100, 101)
    big = validate_rows([{"text": "y" * n} for n in (2000, 4000, 100_000)]).summary.length_chars
    assert big.max == 100_000 and abs(big.p50 - 4000) / 4000 < 0.011


def test_estimate_tokens():
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("café!") == 2  # 4 ASCII chars -> 1, 1 non-ASCII -> 1


def test_overlong_and_prompt_too_long_by_character_estimate():
    rows = [
        {"prompt": "word " * 100, "completion": "fine"},  # prompt ~125 tokens >= 100
        {"prompt": "short", "completion": "word " * 100},  # total over 100: truncated
        {"prompt": "short", "completion": "fine"},
    ]
    report = validate_rows(rows, max_length=100)
    assert [(f.line, f.code) for f in report.errors] == [(1, "prompt_too_long")]
    assert [(f.line, f.code) for f in report.warnings] == [(2, "overlong_row")]
    s = report.summary
    assert (s.prompt_too_long_rows, s.overlong_rows, s.length_unit, s.max_length) == (1, 1, "estimated_tokens", 100)


@pytest.fixture
def tokenizer_json(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    Tokenizer, models, pre_tokenizers = tokenizers.Tokenizer, tokenizers.models, tokenizers.pre_tokenizers

    vocab = {"[UNK]": 0, "hello": 1, "world": 2}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir()
    tok.save(str(path))
    return path


def test_prompt_too_long_by_tokens_with_a_tokenizer(tokenizer_json):
    rows = [
        {"messages": [{"role": "user", "content": "hello " * 10}, {"role": "assistant", "content": "world"}]},
        {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "world " * 20}]},
        # 40 characters but 1 token: the estimate would flag it, the tokenizer does not
        {"messages": [{"role": "user", "content": "x" * 40}, {"role": "assistant", "content": "world"}]},
    ]
    for path in (tokenizer_json, tokenizer_json.parent):
        report = validate_rows(rows, tokenizer_path=str(path), max_length=10)
        assert [(f.line, f.code) for f in report.errors] == [(1, "prompt_too_long")], report.text()
        assert [(f.line, f.code) for f in report.warnings] == [(2, "overlong_row")]
        assert report.summary.length_unit == "tokens" and report.summary.length_tokens.max == 21
        assert "10 tokens" in report.errors[0].message


def test_bad_arguments_raise_action_errors(tmp_path):
    with pytest.raises(ActionError, match="unknown dataset kind"):
        validate_rows([], kind="trl.nope")
    with pytest.raises(ActionError, match="tokenizer"):
        validate_rows([], tokenizer_path=str(tmp_path / "nothing.json"))
    with pytest.raises(ActionError, match="max_length"):
        validate_rows([], max_length=0)


def test_leakage_between_a_train_and_an_eval_file(tmp_path):
    train = write_rows(
        tmp_path / "train.jsonl",
        [
            {"messages": [{"role": "user", "content": "What is 2 + 2?"}, A]},
            {
                "messages": [
                    {"role": "system", "content": "Be terse."},
                    {"role": "user", "content": "  what IS the capital of   France? "},
                    A,
                ]
            },
            {"messages": [{"role": "user", "content": "Unseen question"}, A]},
        ],
    )
    evals = write_rows(tmp_path / "eval.jsonl", [{"prompt": [U]}, {"prompt": [{"role": "user", "content": "x"}]}])
    report = validate_file(train, eval_path=evals)
    [leak] = [f for f in report.errors if f.code == "prompt_leak"]
    assert leak.line == 2 and "eval.jsonl (line 1)" in leak.message
    assert report.summary.leaked_prompts == 1
    reports = validate_files([train, evals], eval_path=evals)
    assert [r.path for r in reports] == [str(train), str(evals)]
    assert reports[0].error_counts_by_code == {"prompt_leak": 1} and reports[1].ok
    three = validate_files([train], eval_path=evals)
    assert [r.path for r in three] == [str(train), str(evals)]
    gone = validate_files([train], eval_path=tmp_path / "nope.jsonl")
    assert "eval_unreadable" in gone[0].error_counts_by_code and gone[1].exit_code == 2
    assert "eval_unreadable" in validate_file(train, eval_path=tmp_path / "nope.jsonl").error_counts_by_code
    inline = validate_rows([{"prompt": "What is the capital of France?", "completion": "Paris"}], eval_path=evals)
    assert inline.error_counts_by_code == {"prompt_leak": 1}


def test_validate_files_reports_each_file(tmp_path):
    a = write_rows(tmp_path / "a.jsonl", [{"text": "a"}])
    b = write_rows(tmp_path / "b.jsonl", [{"text": ""}])
    seen = []
    reports = validate_files([a, b, tmp_path / "c.jsonl"], progress=lambda p, d, t: seen.append(p))
    assert [r.exit_code for r in reports] == [0, 1, 2]
    assert set(seen) == {str(a), str(b)}


def test_report_text_rendering(tmp_path):
    report = validate_rows([{"text": ""}, {"foo": 1}])
    text = report.text()
    assert "INVALID" in text and "empty_text" in text and "line 2" in text
    assert "could not read" in validate_file(tmp_path / "x").text()


def test_drift_tracking_is_capped_with_a_warning():
    rows = [{"text": "a", "meta": {f"k{i}": i for i in range(5000)}}]
    report = validate_rows(rows)
    assert report.warning_counts_by_code == {"drift_paths_capped": 1} and report.ok

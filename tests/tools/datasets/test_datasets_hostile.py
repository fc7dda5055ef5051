"""Hostile input: the validator never crashes, whatever the bytes, and keeps memory flat."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from agent_rl_sandbox.tools.datasets import _validate as validate_module
from agent_rl_sandbox.tools.datasets import validate_file, validate_rows

GOOD = b'{"text": "The sky is blue."}\n'


def write(tmp_path, data: bytes, name="data.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def codes(report):
    return {f.code for f in report.errors} | {f.code for f in report.warnings}


def only(report, code):
    return [f for f in report.errors + report.warnings if f.code == code]


def test_invalid_utf8_is_reported_with_line_and_the_rest_validated(tmp_path):
    report = validate_file(write(tmp_path, GOOD + b'{"text": "caf\xe9"}\n' + GOOD))
    [f] = only(report, "invalid_utf8")
    assert f.line == 2 and "byte offset 13" in f.message
    assert report.summary.parsed_rows == 2 and report.exit_code == 1


def test_utf8_bom_is_stripped_and_warned(tmp_path):
    report = validate_file(write(tmp_path, b"\xef\xbb\xbf" + GOOD + GOOD.replace(b"blue", b"grey")))
    assert report.ok, report.text()
    assert only(report, "utf8_bom")[0].line == 1
    assert report.summary.parsed_rows == 2


def test_utf16_file_is_not_utf8(tmp_path):
    report = validate_file(write(tmp_path, "\ufeff".encode("utf-16-le") + GOOD.decode().encode("utf-16-le")))
    assert codes(report) >= {"not_utf8"} and report.exit_code == 1


def test_crlf_line_endings_are_fine(tmp_path):
    report = validate_file(write(tmp_path, GOOD.replace(b"\n", b"\r\n") + b'{"text": "b"}\r\n'))
    assert report.ok, report.text()
    assert report.rows == 2


def test_blank_lines_are_skipped_and_counted(tmp_path):
    report = validate_file(write(tmp_path, b"\n" + GOOD + b"   \n\t\r\n" + b'{"text": "b"}\n\n'))
    assert report.ok
    assert report.rows == 2 and report.summary.blank_lines == 4
    [f] = only(report, "blank_lines")
    assert f.line == 1 and "4 blank" in f.message


def test_a_50_mb_line_is_reported_without_holding_it(tmp_path):
    path = tmp_path / "big.jsonl"
    with path.open("wb") as fh:
        fh.write(GOOD)
        fh.write(b'{"text": "')
        chunk = b"a" * (1 << 20)
        for _ in range(50):
            fh.write(chunk)
        fh.write(b'"}\n')
        fh.write(b'{"text": "after"}\n')
    tracemalloc.start()
    try:
        report = validate_file(path, max_line_bytes=4 * 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [f] = only(report, "line_too_long")
    assert f.line == 2 and "52,428," in f.message
    assert report.summary.parsed_rows == 2 and report.rows == 3
    assert peak < 16 * 1024 * 1024, peak  # the 50 MB line was never held


def test_default_limit_also_skips_a_50_mb_line(tmp_path):
    path = tmp_path / "big.jsonl"
    with path.open("wb") as fh:
        fh.write(b'{"text": "' + b"b" * (50 * 1024 * 1024) + b'"}\n' + GOOD)
    report = validate_file(path)
    assert [f.line for f in only(report, "line_too_long")] == [1]
    assert report.summary.parsed_rows == 1


def test_line_limit_boundaries(tmp_path):
    line = b'{"text": "' + b"x" * 80 + b'"}'
    exact = len(line) + 1  # with its newline
    ok = validate_file(write(tmp_path, line + b"\n"), max_line_bytes=exact)
    assert ok.ok
    over = validate_file(write(tmp_path, line + b"\n"), max_line_bytes=exact - 2)
    assert codes(over) == {"line_too_long", "no_rows"} or "line_too_long" in codes(over)


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e400"])
def test_nan_and_infinity_are_rejected(tmp_path, literal):
    report = validate_file(write(tmp_path, GOOD + b'{"text": "a", "score": ' + literal + b"}\n"))
    [f] = only(report, "nan_not_allowed")
    assert f.line == 2


def test_nan_in_inline_rows():
    report = validate_rows([{"text": "a", "score": float("nan")}, {"text": "b", "x": float("inf")}])
    assert [f.line for f in only(report, "nan_not_allowed")] == [1, 2]


def test_deep_nesting_beyond_the_parser(tmp_path):
    deep = b"[" * 200_000 + b"]" * 200_000
    report = validate_file(write(tmp_path, GOOD + deep + b"\n" + b'{"text": ' + deep + b"}\n"))
    assert [f.line for f in only(report, "too_deep")] == [2, 3]


def test_deep_nesting_the_parser_accepts_is_still_bounded(tmp_path):
    value = "x"
    for _ in range(300):
        value = {"a": value}
    row = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "meta": value}
    report = validate_file(write(tmp_path, (json.dumps(row) + "\n").encode()))
    assert "too_deep" in codes(report)
    assert "internal_error" not in codes(report)


def test_deeply_nested_and_cyclic_inline_rows():
    deep: list = []
    cur = deep
    for _ in range(5000):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    cyclic: dict = {"text": "x"}
    cyclic["self"] = cyclic
    report = validate_rows([{"text": "a", "d": deep}, cyclic, {"text": {1, 2}}])
    found = {(f.line, f.code) for f in report.errors}
    assert (1, "too_deep") in found and (2, "too_deep") in found and (3, "not_json") in found


def test_truncated_last_line(tmp_path):
    report = validate_file(write(tmp_path, GOOD + b'{"text": "unfinish'))
    [f] = only(report, "invalid_json")
    assert f.line == 2 and "truncated" in f.message


def test_invalid_json_reports_the_column(tmp_path):
    report = validate_file(write(tmp_path, b'{"text": "a",, "b": 1}\n'))
    [f] = only(report, "invalid_json")
    assert f.line == 1 and "column 14" in f.message


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x00\x00\n",
        b'{"text": "a\x01b"}\n',
        b"1" * 5000 + b"\n",
        b'{"n": ' + b"9" * 5000 + b"}\n",
        b"\r\r\r",
        b"\xff\xfe\xfd",
        b'"just a string"\n',
        b"null\n",
        b"[]\n",
        b'{"a": 1, "a": 2}\n',
        b"\xef\xbb\xbf",
        b"{" * 3 + b"\n" + b"}" * 3,
        b"[\n" + b'{"text": "a"},\n' * 3 + b'{"text": "b"}\n]\n',
        b"[\n1,\n",
        b"[1 2]\n",
        b"[1, 2] x\n",
    ],
)
def test_odd_bytes_never_crash(tmp_path, data):
    report = validate_file(write(tmp_path, data))
    assert report.exit_code in (0, 1)
    assert "internal_error" not in codes(report)
    report.model_dump_json()


def test_lone_surrogate_escape_is_an_error_and_reports_serialise(tmp_path):
    data = (
        b'{"messages": [{"role": "user", "content": "\\ud800"}, {"role": "assistant", "content": "x"}],'
        b' "tools": [{"type": "function", "function": {"name": "\\udfff"}}]}\n'
    )
    report = validate_file(write(tmp_path, data))
    assert "lone_surrogate" in codes(report)
    json.loads(report.model_dump_json())  # no surrogate reaches the serialised report


def test_empty_file_has_no_rows(tmp_path):
    report = validate_file(write(tmp_path, b""))
    assert codes(report) == {"no_rows"} and report.exit_code == 1
    assert validate_rows([]).exit_code == 1


def test_missing_file_directory_and_permission_are_exit_code_2(tmp_path, monkeypatch):
    missing = validate_file(tmp_path / "nope.jsonl")
    assert missing.exit_code == 2 and "no such file" in missing.could_not_read
    directory = validate_file(tmp_path)
    assert directory.exit_code == 2 and "directory" in directory.could_not_read
    path = write(tmp_path, GOOD)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(validate_module, "open", denied, raising=False)
    report = validate_file(path)
    assert report.exit_code == 2 and "Permission denied" in report.could_not_read
    assert not report.ok


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_mode_is_exit_code_2(tmp_path):
    path = write(tmp_path, GOOD)
    path.chmod(0)
    try:
        assert validate_file(path).exit_code == 2
    finally:
        path.chmod(0o644)


def test_json_document_array_rows_get_their_lines(tmp_path):
    data = b'[\n  {"text": "a"},\n  {"text": ""},\n  {"text": "c"}\n]\n'
    report = validate_file(write(tmp_path, data, "rows.json"))
    [f] = only(report, "empty_text")
    assert f.line == 3
    assert report.rows == 3


def test_truncated_document_reports_line_and_column(tmp_path):
    data = b'{\n  "schema_version": "ATIF-v1.5",\n  "session_id": "s",\n  "steps": [\n'
    report = validate_file(write(tmp_path, data, "t.json"))
    [f] = only(report, "invalid_json")
    assert f.line == 5 and "line 5" in f.message


def test_document_too_large(tmp_path):
    data = b'{\n  "tasks": [\n' + b'    {"id": "x"},\n' * 100 + b'    {"id": "y"}\n  ],\n  "agent": "a"\n}\n'
    report = validate_file(write(tmp_path, data, "suite.json"), max_document_bytes=100)
    assert "document_too_large" in codes(report)
    report = validate_file(write(tmp_path, data, "suite.json"))
    assert report.ok and report.warnings[0].code == "duplicate_task_id"  # Port Daddy scores repeated ids


def test_a_read_error_midway_is_exit_code_2(tmp_path, monkeypatch):
    path = write(tmp_path, GOOD * 10)
    real_open = open

    class Flaky:
        def __init__(self, *a, **k):
            self._fh = real_open(*a, **k)
            self._n = 0

        def readline(self, *a):
            self._n += 1
            if self._n > 5:
                raise OSError(5, "Input/output error")
            return self._fh.readline(*a)

        def __getattr__(self, name):
            return getattr(self._fh, name)

    monkeypatch.setattr(validate_module, "open", Flaky, raising=False)
    report = validate_file(path)
    assert report.exit_code == 2 and "Input/output error" in report.could_not_read

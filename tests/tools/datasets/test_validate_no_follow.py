"""Issue 10 §4: ``dataset_validate`` cannot be steered outside its allowed folders by symlinks, not
even by swapping a folder for a link while the call runs (real files, real threads, the real service)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.datasets import DatasetService, DatasetValidateInput, validate_file
from agent_rl_sandbox.tools.datasets._open import open_no_follow
from agent_rl_sandbox.tools.errors import ActionError

ALLOWED_ROW = {"text": "an allowed row"}
SECRET_ROWS = [{"text": f"SECRET-{i}"} for i in range(7)]
"""Stands for /etc/shadow: seven rows, so any report that read it shows ``rows == 7``."""


@pytest.fixture
def layout(tmp_path):
    data, secret = tmp_path / "data", tmp_path / "secret"
    (data / "sub").mkdir(parents=True)
    secret.mkdir()
    (data / "sub" / "rows.jsonl").write_text(json.dumps(ALLOWED_ROW) + "\n")
    (secret / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SECRET_ROWS))
    service = DatasetService(Settings(home=tmp_path / "home", data_dirs=(data,)))
    return data, secret, service


def _read_secret(out) -> bool:
    text = out.model_dump_json()
    return "SECRET" in text or out.report.rows == len(SECRET_ROWS)


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(layout):
    """The race, made deterministic: the path was checked while ``sub`` was a folder; by the open it
    is a link to the secret folder. A plain open reads the secret; the no-follow open refuses."""
    data, secret, _ = layout
    checked = (data / "sub" / "rows.jsonl").resolve()
    os.rename(data / "sub", data / "sub.real")
    os.symlink(secret, data / "sub")
    assert validate_file(checked).rows == len(SECRET_ROWS)  # what the tool did before
    report = validate_file(checked, opener=open_no_follow)
    assert report.exit_code == 2 and report.rows == 0
    assert "component 'sub' is a symbolic link" in report.could_not_read
    # as eval_path too
    leak = validate_file(data / "sub.real" / "rows.jsonl", eval_path=checked, opener=open_no_follow)
    assert [e.code for e in leak.errors] == ["eval_unreadable"] and "symbolic link" in leak.errors[0].message


def test_links_fifos_and_folders_are_refused_by_the_tool(layout):
    data, secret, service = layout
    os.symlink(secret / "rows.jsonl", data / "link.jsonl")
    with pytest.raises(ActionError, match="outside the folders this tool may read"):
        service.validate(DatasetValidateInput(path=str(data / "link.jsonl")))
    os.mkfifo(data / "pipe.jsonl")
    t0 = time.monotonic()
    with pytest.raises(ActionError, match="could not be read: .*FIFO"):  # a flagged error, not a verdict
        service.validate(DatasetValidateInput(path=str(data / "pipe.jsonl")))
    assert time.monotonic() - t0 < 5  # no writer ever opens the FIFO: a blocking open would hang here
    with pytest.raises(ActionError, match="could not be read: .*folder"):
        service.validate(DatasetValidateInput(path=str(data / "sub")))
    ok = service.validate(DatasetValidateInput(path=str(data / "sub" / "rows.jsonl")))
    assert ok.verdict == "valid" and ok.report.rows == 1


def test_open_no_follow_refuses_every_kind_of_link(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x")
    os.symlink(tmp_path / "d", tmp_path / "dl")
    os.symlink(tmp_path / "d" / "f", tmp_path / "d" / "fl")
    with open_no_follow(tmp_path / "d" / "f") as fh:
        assert fh.read() == b"x"
    for bad, why in (
        (tmp_path / "dl" / "f", "is a symbolic link or not a folder"),
        (tmp_path / "d" / "fl", "the file is a symbolic link"),
        (tmp_path / "d" / "f" / "g", "is a symbolic link or not a folder"),
        (tmp_path / "d" / ".." / "d" / "f", "without . or .. parts"),
    ):
        with pytest.raises(OSError) as e:
            open_no_follow(bad)
        assert why in e.value.strerror, (bad, e.value.strerror)


def test_racing_a_folder_against_a_link_never_reads_the_secret(layout):
    """A thread flips ``data/sub`` between the real folder and a link to the secret folder as fast as
    it can while the tool validates ``data/sub/rows.jsonl`` over and over."""
    data, secret, service = layout
    stop = threading.Event()
    flips = 0

    def flipper():
        nonlocal flips
        while not stop.is_set():
            os.rename(data / "sub", data / "sub.real")
            os.symlink(secret, data / "sub")
            os.unlink(data / "sub")
            os.rename(data / "sub.real", data / "sub")
            flips += 1

    t = threading.Thread(target=flipper, daemon=True)
    t.start()
    outcomes: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 3.0
        calls = 0
        while time.monotonic() < deadline or calls < 200:
            calls += 1
            try:
                out = service.validate(DatasetValidateInput(path=str(data / "sub" / "rows.jsonl")))
            except ActionError as e:
                # the check itself saw the link or saw it vanish mid-resolve ("refused"), or the
                # no-follow open met the link ("unreadable": a flagged error naming the path)
                assert "SECRET" not in str(e)
                if "could not be read" in str(e):
                    outcomes["unreadable"] = outcomes.get("unreadable", 0) + 1
                    continue
                assert "outside the folders" in str(e) or "could not be resolved" in str(e)
                outcomes["refused"] = outcomes.get("refused", 0) + 1
                continue
            assert not _read_secret(out), out.model_dump_json()
            assert out.verdict == "valid" and out.report.rows == 1, out.model_dump_json()
            outcomes["valid"] = outcomes.get("valid", 0) + 1
    finally:
        stop.set()
        t.join(5)
    assert flips > 10 and sum(outcomes.values()) == calls, outcomes

"""Errors a user can act on end in one line on stderr and exit code 2, never a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = str(Path(__file__).resolve().parents[1] / "fixtures" / "port_daddy" / "claim_before_edit.suite.json")


def _cli(args, tmp_path, **env):
    full = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), **env}
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", *args], env=full, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["demo", "--task", "nope"], {}, "unknown task 'nope'"),
        (["tasks", "check", "nope"], {}, "unknown task 'nope'. Next step"),
        (["tasks", "check", "nope", "nada"], {}, "unknown tasks 'nope', 'nada'. Next step"),
        (["score", "store", "--gate", "nogate"], {}, "unknown gate 'nogate'. Next step: use one of default, deploy or"),
        (["score", "/tmp/ux3-no-such-dir/nothing.json"], {}, "error: /tmp/ux3-no-such-dir/nothing.json: no such file"),
        (
            ["score", SUITE, "--spec", "/tmp/ux3-none/spec.json"],
            {},
            "error: /tmp/ux3-none/spec.json: no such file",
        ),
        (["tasks", "show", "nope"], {}, "unknown task 'nope'"),
        (["tasks", "list"], {"AGENT_RL_SANDBOX_ISOLATION": "bogus"}, "bad setting AGENT_RL_SANDBOX_ISOLATION='bogus'"),
        (["serve"], {"AGENT_RL_SANDBOX_IDLE_SECONDS": "soon"}, "bad setting"),
        (["serve"], {"AGENT_RL_SANDBOX_ISOLATION": "bogus"}, "bad setting AGENT_RL_SANDBOX_ISOLATION='bogus'"),
        (["serve"], {"AGENT_RL_SANDBOX_JOB_MAX_STEPS": "many"}, "bad setting AGENT_RL_SANDBOX_JOB_MAX_STEPS='many'"),
        *(
            (
                ["tasks", "list"],
                {f"AGENT_RL_SANDBOX_{var}": value},
                f"bad setting AGENT_RL_SANDBOX_{var}={value!r} is not {kind}",
            )
            for var, value, kind in (
                ("QUOTA_OPEN_SANDBOXES", "abc", "a whole number (or none / off for no limit)"),
                ("QUOTA_STEPS_PER_MINUTE", "1.5", "a whole number (or none / off for no limit)"),
                ("HTTP_MAX_REQUEST_BYTES", "abc", "a whole number"),
                ("HOOK_LINGER", "abc", "a number of seconds (0 or more, default 20)"),
                ("HOOK_TIMEOUT", "abc", "a number of seconds (0 or more, default 10)"),
                ("HOOK_TIMEOUT", "-1", "a number of seconds"),
            )
        ),
        (["score", "store"], {"AGENT_RL_SANDBOX_DATABASE_URL": "notaurl"}, "cannot open the store"),
        (
            ["score", "store"],
            {"AGENT_RL_SANDBOX_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/x"},
            "cannot open the store",
        ),
    ],
)
def test_user_errors_exit_2_without_traceback(tmp_path, args, env, needle):
    p = _cli(args, tmp_path, **env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stderr
    assert "Traceback" not in p.stderr and "╭─" not in p.stderr
    if "bad setting AGENT" in needle:  # the next step names the variable too, never the parser's words
        var = needle.split()[2].split("=")[0]
        assert f"Next step: fix or unset {var}" in p.stderr and "invalid literal" not in p.stderr, p.stderr


def _big(path, head: bytes, size: int = 65 * 1024 * 1024 + 1) -> str:
    """A file of ``size`` bytes (over the 64 MiB cap of the model path) that starts with ``head``
    (the rest is a sparse run of NUL bytes: quick to make, valid UTF-8, never a JSON token)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return str(path)


@pytest.mark.parametrize("as_json", [True, False])
@pytest.mark.parametrize(
    ("head", "needle", "step"),
    [
        (b'{"tasks": [\xff', "not UTF-8 text (byte 11)", "save the file as UTF-8 JSON"),
        (
            b'{"tasks": [\n{"id": "a"',
            "not valid JSON: the file ends inside the object opened at byte 12",
            "fix the JSON",
        ),
        (b'{"tasks": [\n{"id": "a"]', "not valid JSON: an unexpected ']', at byte 22 (line 2)", "fix the JSON"),
        (
            b'{"tasks": [{"id": "a\n"}]}',
            "not valid JSON: a string that is never closed, at byte 18 (line 1)",
            "fix the JSON",
        ),
    ],
)
def test_score_big_broken_file_names_the_defect_not_the_size(tmp_path, as_json, head, needle, step):
    """A file over the size cap that the streaming scorer declines because its text is broken
    reports that defect (where it is), not only its size (``split the input``)."""
    big = _big(tmp_path / "broken.json", head)
    p = _cli(["score", big, *(["--json"] if as_json else [])], tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"error: broken.json: {needle}" in p.stderr, p.stderr
    assert f"Next step: {step}" in p.stderr and "byte limit" not in p.stderr
    assert "Traceback" not in p.stderr


def test_score_big_file_names_the_streaming_scorer(tmp_path):
    """Over the cap with no defect in its text: the next step says ``score FILE --json`` streams a suite."""
    big = _big(tmp_path / "big.json", b'{"tasks": []}')
    p = _cli(["score", big], tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "over the 67108864-byte limit" in p.stderr
    assert "score FILE --json` (without --gate), which streams it" in p.stderr, p.stderr


def test_score_json_big_declined_suite_says_why(tmp_path):
    """``--json`` on a file over the cap whose text is whole but that the streaming scorer declines:
    the error gives the scorer's reason, and does not send the user back to ``--json``."""
    big = _big(tmp_path / "big.json", b'{"tasks": []}')
    p = _cli(["score", big, "--json"], tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "the streaming scorer (no limit) cannot take it: no tasks" in p.stderr, p.stderr
    assert "--json" not in p.stderr and "Traceback" not in p.stderr


def test_import_names_the_file_once_and_counts_in_words(tmp_path):
    """``import`` of a broken JSON file names it once; a clean import's line says ``1 trajectory``."""
    from pathlib import Path

    broken = tmp_path / "atif_trunc.json"
    broken.write_text('{"schema_version": "ATIF-v1.4", "steps": [')
    p = _cli(["import", str(broken)], tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("atif_trunc.json") == 1, p.stderr
    assert "not valid JSON" in p.stderr and "Traceback" not in p.stderr
    fixture = Path(__file__).resolve().parents[1] / "fixtures/imports/atif/openhands__hello-world.trajectory.json"
    ok = _cli(["import", str(fixture)], tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "atif, 1 trajectory, 6 steps (0 already imported, 1 call without result," in ok.stdout, ok.stdout
    assert "trajectories" not in ok.stdout


def test_import_of_a_pretty_printed_document_says_so(tmp_path):
    """Fresh user, session 5: a pretty-printed hook payload gave "no line is JSON". The error now says
    the file is one pretty-printed document (a hook event, named as such) and what to pass instead."""
    import json

    event = {
        "session_id": "s-1",
        "transcript_path": "/tmp/t.jsonl",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
    hook = tmp_path / "pretool.json"
    hook.write_text(json.dumps(event, indent=2))
    p = _cli(["import", str(hook)], tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "no line is JSON" not in p.stderr
    assert "one JSON document over 9 lines (pretty-printed), not JSON Lines" in p.stderr, p.stderr
    assert "hook event payload" in p.stderr and "agent-rl-sandbox hook claude-code" in p.stderr
    assert "one JSON object per line" in p.stderr
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": ["a", "b"]}, indent=2))
    p = _cli(["import", str(other)], tmp_path)
    assert p.returncode == 2 and "pretty-printed" in p.stderr and "one JSON object per line" in p.stderr, p.stderr
    assert "hook" not in p.stderr
    for broken in (b"{\n  not json\n", b"garbage\nmore garbage\n"):
        (tmp_path / "b.json").write_bytes(broken)
        p = _cli(["import", str(tmp_path / "b.json")], tmp_path)
        assert p.returncode == 2 and "pretty-printed" not in p.stderr, p.stderr

"""Secret redaction: detect-secrets' detectors plus the documented extra patterns, markers, counts, and no
damage to the ids and hashes trajectories are full of."""

from __future__ import annotations

import pytest

from agent_rl_sandbox.tools.trajectories import Redactor


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


@pytest.mark.parametrize(
    "text, kind, gone",
    [
        ("git clone https://alice:s3cr3tP4ss@github.com/org/repo.git", "basic-auth-credentials", "s3cr3tP4ss"),
        ("postgresql://app:pw-4-prod!@db.internal:5432/main", "basic-auth-credentials", "pw-4-prod!"),
        ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
        ("GITHUB_TOKEN=ghp_" + "a1B2" * 9, "github-token", "a1B2a1B2"),
        ("xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx", "slack-token", "abcdefghijklmnop"),
        ('password = "correct horse battery staple"', "secret-keyword", "correct horse"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456", "bearer-token", "abcdefghijklmnopqrstuvwxyz123456"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-" + "x" * 90, "anthropic-api-key", "x" * 90),
        ("OPENAI_API_KEY=sk-proj-" + "Ab9_" * 12, "openai-api-key", "Ab9_Ab9_"),
        ("HF_TOKEN=hf_" + "Q" * 34, "huggingface-token", "Q" * 34),
        ("key=AIza" + "B" * 35, "google-api-key", "B" * 35),
        (
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "json-web-token",
            "dozjgNryP4J3",
        ),
        (
            "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1\nabc\n-----END RSA PRIVATE KEY-----\ny",
            "private-key",
            "MIIEow",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA (cut)", "private-key", "b3BlbnNz"),
    ],
)
def test_detects_and_marks(redactor, text, kind, gone):
    out, counts = redactor.text(text)
    assert counts == {kind: 1}, (out, counts)
    assert gone not in out and f"[REDACTED:{kind}]" in out
    again, more = redactor.text(out)
    assert again == out and not more  # idempotent: markers are never redacted twice


def test_keeps_context_around_a_secret(redactor):
    out, _ = redactor.text("git clone https://alice:s3cr3tP4ss@github.com/org/repo.git && make")
    assert out == "git clone https://alice:[REDACTED:basic-auth-credentials]@github.com/org/repo.git && make"
    out, _ = redactor.text("x\n-----BEGIN EC PRIVATE KEY-----\nAAA\n-----END EC PRIVATE KEY-----\ny")
    assert out == "x\n[REDACTED:private-key]\ny"


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a",
        "tree 9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a3f2a and session 550e8400-e29b-41d4-a716-446655440000",
        "toolu_01ABC123xyz traj_3f2a9c1e5b7d call_AnMStssFtufeBXJJ9HuJQeb0",
        "def discounted(price, pct):\n    return round(price * (1 - pct / 100), 2)\n",
        "4 passed in 0.05s; exit 0",
        "SHOPCART_API_TOKEN=fake-shopcart-token-not-a-secret",
        "https://github.com/org/repo.git and ssh://git@github.com/org/repo",
    ],
)
def test_leaves_ids_hashes_and_code_alone(redactor, text):
    assert redactor.text(text) == (text, {})


def test_walks_json_values_but_not_id_fields(redactor):
    value = {
        "tool_call_id": "AKIAIOSFODNN7EXAMPLE",
        "arguments": {"env": ["A=1", "KEY=AKIAIOSFODNN7EXAMPLE"], "n": 3, "ok": True, "none": None},
    }
    out, counts = redactor.value(value)
    assert out["tool_call_id"] == "AKIAIOSFODNN7EXAMPLE"
    assert out["arguments"] == {"env": ["A=1", "KEY=[REDACTED:aws-access-key]"], "n": 3, "ok": True, "none": None}
    assert counts == {"aws-access-key": 1}
    assert value["arguments"]["env"][1].endswith("EXAMPLE")  # the input is not modified

"""The redactor's pre-filters (keyword gate, quote gate) never change its output: the pre-filtered
redactor and the reference that runs every detect-secrets pattern on every string agree on the
project's redaction cases, keyword assignments in detect-secrets' own styles, and generated text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_rl_sandbox.tools.store._redact import _KEYWORD_AND_QUOTE, Redactor
from tests.tools.trajectories import test_trajectories_redact as cases


@pytest.fixture(scope="module")
def pair() -> tuple[Redactor, Redactor]:
    return Redactor(), Redactor(prefilter=False)


def _marked(test) -> list[str]:
    texts = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize":
            for row in mark.args[1]:
                texts.append(row[0] if isinstance(row, tuple) else row)
    return texts


# KeywordDetector's styles (detect-secrets' tests/plugins/keyword_test.py): quoted values after =, :, ==,
# =>, :=, ! ==, a closing bracket, a trailing semicolon, and the comparison with the value first.
KEYWORD_STYLES = [
    'password = "hunter2hunter2"',
    "api_key: 'abcd1234efgh'",
    'db_pass => "s3cr3t-value"',
    'if (secret == "topsecretvalue") {',
    'if ("topsecretvalue" !== secret_key) {',
    'config["private_key"] = "m0re-secret"',
    'private_key := "m0re-secret"',
    "String pwd = `templated-pass`;",
    "contraseña = 'clave-super-secreta'",
    'apikey "no-assignment-quoted";',
    "password = hunter2 (no quotes: not a keyword secret)",
    "4 passed in 0.05s; " * 20,
    "token: abcdef0123456789abcdef0123456789abcdef0123456789",
    'softlayer_api_key = "' + "a" * 64 + '"',
    "ibm_cos_hmac_secret_access_key: " + "f" * 48,
]


def test_keyword_patterns_are_quote_gated(pair):
    # The speed-up rests on this: every KeywordDetector pattern of the pinned detect-secrets needs a quote.
    gated = [needs for _rx, _g, needs, kind, _c in pair[0]._flat if kind == "secret-keyword"]
    assert gated and all(n == _KEYWORD_AND_QUOTE for n in gated)


@pytest.mark.parametrize(
    "text",
    _marked(cases.test_detects_and_marks) + _marked(cases.test_leaves_ids_hashes_and_code_alone) + KEYWORD_STYLES,
)
def test_prefilter_matches_reference(pair, text):
    fast, full = pair
    assert fast.text(text) == full.text(text)
    assert fast.value({"message": text, "x": [text]}) == full.value({"message": text, "x": [text]})


_PIECES = st.sampled_from(
    [
        "password",
        "passwd",
        "pwd",
        "secret",
        "api_key",
        "apikey",
        "auth_key",
        "token",
        "contraseña",
        "key",
        "pass",
        "=",
        "==",
        "!==",
        ":",
        ":=",
        "=>",
        " ",
        "\t",
        "\n",
        ";",
        "'",
        '"',
        "`",
        "[",
        "]",
        "(",
        ")",
        "hunter2",
        "s3cr3t-value",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "a1B2" * 9,
        "://u:p@h",
        "4 passed in 0.05s",
        "softlayer",
        "ibm",
        "cos",
        "hmac",
        "cloudant",
        "f" * 48,
        "a" * 64,
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES | st.text(max_size=6), max_size=30).map("".join))
def test_prefilter_matches_reference_on_generated_text(text):
    fast, full = _PAIR
    assert fast.text(text) == full.text(text)


_PAIR = (Redactor(), Redactor(prefilter=False))


# Secrets at the shortest length their pattern takes, alone in a string (the text is exactly as long as
# the match), one character short, and padded: the length gate (Redactor._by_length) must keep each
# pattern whose match fits and skip only those that cannot fit.
SHORTEST = [
    "AKIAIOSFODNN7EXAMPLE",  # AWS access key id: 20 characters
    "AKIAIOSFODNN7EXAMPL",
    "xoxb-1234",  # Slack token prefix form
    "https://u:p@h",
    "ghp_" + "a1B2" * 9,  # GitHub: 40
    "hf_" + "a" * 34,
    "sk_live_" + "a" * 24,  # Stripe: 32
    "AIza" + "b" * 35,  # Google: 39
    "AIza" + "b" * 34,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
    "npm_" + "A" * 36,
]


@pytest.mark.parametrize("text", SHORTEST + [f" {t} " for t in SHORTEST] + [t[:-1] for t in SHORTEST])
def test_length_gate_keeps_every_pattern_that_fits(pair, text):
    fast, full = pair
    assert fast.text(text) == full.text(text)


def test_length_gate_is_a_lower_bound_of_every_pattern(pair):
    fast, _ = pair
    # Each pattern left out for a length cannot match any text of that length: every match it finds in
    # a long text is at least as long as the gate says.
    sample = " ".join(SHORTEST + KEYWORD_STYLES) * 2
    for n, kept in enumerate(fast._by_length):
        for entry in fast._flat:
            if entry in kept:
                continue
            for m in entry[0].finditer(sample):
                assert m.end() - m.start() > n, (entry[0].pattern, n, m.group())
    assert fast.text("AKIAIOSFODNN7EXAMPLE")[1] == {"aws-access-key": 1}

"""The bulk redaction screen (``Redactor.value_screened``) never changes what redaction finds: against the
reference that runs every detect-secrets pattern on every string, on a corpus with each known secret in
every field of a step (message, nested tool arguments, results, metrics, extra, lists), the real sample
and import fixtures with secrets planted in them, and generated values (quotes, backslashes, controls,
non-ASCII case folds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_rl_sandbox.tools.store._redact import Redactor
from tests.tools.trajectories import test_redact_prefilter as pre
from tests.tools.trajectories import test_trajectories_redact as cases

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FAST, FULL = Redactor(), Redactor(prefilter=False)

SECRETS = [t for t in pre._marked(cases.test_detects_and_marks) + pre.KEYWORD_STYLES if FULL.text(t)[1]]
"""Every text of the redaction cases in which the reference finds a secret."""
CLEAN = pre._marked(cases.test_leaves_ids_hashes_and_code_alone)


def _same(value) -> None:
    fast = FAST.value_screened(value)
    full = FULL.value(value)
    assert fast == full, (value, fast, full)


def _step_with(text: str) -> list[dict]:
    """``text`` in each field type of a step in turn (the rest of the step clean)."""
    base = {
        "source": "agent",
        "message": "running the tests",
        "tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {"command": "pytest -q"}}],
        "observation": {"results": [{"source_call_id": "c1", "content": "4 passed in 0.05s"}]},
        "metrics": {"prompt_tokens": 100, "completion_tokens": 50, "cost_usd": 0.00075},
        "extra": {},
        "provenance": "agent",
        "client_step_id": "imp:1",
    }
    variants = []
    for where in range(8):
        s = json.loads(json.dumps(base))
        if where == 0:
            s["message"] = f"note: {text} (end)"
        elif where == 1:
            s["tool_calls"][0]["arguments"]["command"] = text
        elif where == 2:
            s["tool_calls"][0]["arguments"]["env"] = {"nested": [{"deep": ["x", text]}]}
        elif where == 3:
            s["observation"]["results"][0]["content"] = "line 1\n" + text + "\nline 3"
        elif where == 4:
            s["observation"]["results"][0]["content"] = [{"type": "text", "text": text}]
        elif where == 5:
            s["metrics"]["note"] = text
        elif where == 6:
            s["extra"] = {"command": text, "paths": [text, "/w/a.py"]}
        else:
            s["timestamp"] = text  # a skipped key: never scanned, both sides leave it
            s["tool_calls"][0]["tool_call_id"] = text
        variants.append(s)
    return variants


@pytest.mark.parametrize("text", SECRETS + CLEAN)
def test_screen_agrees_in_every_field(text):
    for step in _step_with(text):
        _same(step)


def test_screened_secrets_are_found():
    assert len(SECRETS) >= 20
    for text in SECRETS:
        out, counts = FAST.value_screened({"message": text})
        assert counts, text  # a secret the screen dropped would show here (and in the comparison above)


def _fixture_values() -> list:
    values = []
    for path in sorted(FIXTURES.glob("samples/**/*.json*")) + sorted(FIXTURES.glob("imports/**/*.json*")):
        data = path.read_text(encoding="utf-8")
        try:
            values.append(json.loads(data))
        except ValueError:  # JSON Lines (broken lines, which some fixtures hold on purpose, left out)
            for line in data.splitlines():
                try:
                    values.append(json.loads(line))
                except ValueError:
                    pass
    return values


def _plant(value, secret: str, every: int, n: list[int]):
    """A copy of ``value`` with ``secret`` appended to every ``every``-th string."""
    if isinstance(value, str):
        n[0] += 1
        return value + " " + secret if n[0] % every == 0 else value
    if isinstance(value, dict):
        return {k: _plant(v, secret, every, n) for k, v in value.items()}
    if isinstance(value, list):
        return [_plant(v, secret, every, n) for v in value]
    return value


def test_screen_agrees_on_real_samples_with_and_without_planted_secrets():
    values = _fixture_values()
    assert len(values) > 20
    for v in values:
        _same(v)
    for i, secret in enumerate(SECRETS):
        for v in values[i % 5 :: 5]:
            _same(_plant(v, secret, 3 + i % 4, [0]))


def test_lone_surrogates_big_integers_and_odd_keys():
    for v in [{"message": "\ud800 password = 'hunter2hunter2'"}, {"n": 2**70, "m": "AKIAIOSFODNN7EXAMPLE"}, {1: "x"}]:
        assert FAST.value_screened(v) == FULL.value(v)


def test_a_clean_value_comes_back_as_is():
    v = {"message": "4 passed in 0.05s", "extra": {"paths": ["/w/a.py"]}}
    out, counts = FAST.value_screened(v)
    assert out is v and not counts


_TEXT = st.lists(
    pre._PIECES
    | st.sampled_from(['\\"', "\\", '"', "\n", "\t", "\x00", "K", "ſ", "İ", "é", "😀", "AKC" + "a" * 12, "hf_"])
    | st.text(max_size=6),
    max_size=25,
).map("".join)
_VALUES = st.recursive(
    _TEXT | st.integers(-5, 5) | st.none() | st.booleans(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["message", "content", "arguments", "tool_call_id", "x", "k"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES)
def test_screen_agrees_on_generated_values(value):
    _same(value)


def _same_batch(values: list, batch: int) -> None:
    assert FAST.values_screened(values, batch=batch) == [FULL.value(v) for v in values]


@pytest.mark.parametrize("batch", [1, 3, 256])
def test_batches_agree_with_the_reference(batch):
    # Clean steps with a secret here and there: the batch screen keeps the secret's patterns, each step's
    # own screen then drops them where they cannot match.
    values = []
    for i, text in enumerate(SECRETS + CLEAN):
        values.extend(_step_with(text)[i % 8 : i % 8 + 2])
        values.extend(_step_with(CLEAN[i % len(CLEAN)])[:2])
    _same_batch(values, batch)
    _same_batch(_fixture_values(), batch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_VALUES, max_size=8), st.integers(1, 4))
def test_batches_agree_on_generated_values(values, batch):
    _same_batch(values, batch)

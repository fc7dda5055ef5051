"""The job spec's canonical hash (what an approval is bound to) and the state machine's actors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_rl_sandbox.schemas.jobs import JobSpec
from agent_rl_sandbox.tools.jobs import TRANSITIONS, allowed, canonical_spec, is_final, spec_hash

BASE = {
    "route": "sft",
    "trainer": "sft",
    "base_model": "/models/tiny",
    "dataset": {"kind": "file", "path": "data/../data/sft.jsonl"},
    "gate": {"behaviour": "claim-before-edit"},
    "reason": "teach claiming",
}


def _hash(doc: dict, cwd: str = "/work/x", sha: str = "a" * 64) -> str:
    return spec_hash(canonical_spec(JobSpec.model_validate(doc), cwd=Path(cwd), dataset_sha256=sha))


def test_hash_ignores_key_order_defaults_and_path_spelling():
    h = _hash(BASE)
    shuffled = json.loads(json.dumps(dict(reversed(list(BASE.items())))))
    assert _hash(shuffled) == h
    assert _hash({**BASE, "adapter": {"kind": "lora", "rank": 16}}) == h  # the defaults, spelled out
    assert _hash({**BASE, "dataset": {"kind": "file", "path": "/work/x/data/sft.jsonl"}}) == h


@pytest.mark.parametrize(
    "change",
    [
        {"base_model": "/models/other"},
        {"adapter": {"rank": 17}},
        {"caps": {"max_steps": 201}},
        {"hyperparameters": {"beta": 0.2}},
        {"reason": "teach claiming!"},
        {"gate": {"behaviour": "claim-before-edit", "name": "default"}},
    ],
)
def test_any_change_of_meaning_changes_the_hash(change):
    assert _hash({**BASE, **change}) != _hash(BASE)


def test_dataset_content_and_location_are_in_the_hash():
    assert _hash(BASE, sha="b" * 64) != _hash(BASE)
    assert _hash(BASE, cwd="/work/y") != _hash(BASE)


def test_bad_specs_name_the_field():
    with pytest.raises(ValidationError, match="adapter.rank applies to lora and qlora only"):
        JobSpec.model_validate({**BASE, "adapter": {"kind": "full", "rank": 8}})
    with pytest.raises(ValidationError, match="trainer"):
        JobSpec.model_validate({**BASE, "trainer": "ppo"})
    with pytest.raises(ValidationError, match="extra"):
        JobSpec.model_validate({**BASE, "approved": True})


def test_only_humans_approve_and_agents_may_only_cancel():
    agent_moves = {(src, dst) for (src, dst), actors in TRANSITIONS.items() if "agent" in actors}
    assert {dst for _, dst in agent_moves} == {"cancelled"}
    assert allowed("awaiting_approval", "approved", "human") and not allowed("awaiting_approval", "approved", "agent")
    assert not allowed("awaiting_approval", "queued", "worker") and not allowed("rejected", "approved", "human")
    assert all(not is_final(src) for src, _ in TRANSITIONS)


def test_spec_changes_lists_each_changed_field():
    from agent_rl_sandbox.tools.jobs import spec_changes
    from agent_rl_sandbox.tools.jobs._hash import ABSENT

    a = {"caps": {"max_steps": 50, "timeout_s": 600}, "reason": "x", "tags": [1, 2], "old": 1}
    b = {"caps": {"max_steps": 99, "timeout_s": 600}, "reason": "x", "tags": [1, 3], "new": {"k": 1}}
    assert spec_changes(a, a) == []
    assert spec_changes(a, b) == [
        {"path": "caps.max_steps", "before": 50, "after": 99},
        {"path": "new", "before": ABSENT, "after": {"k": 1}},
        {"path": "old", "before": 1, "after": ABSENT},
        {"path": "tags", "before": [1, 2], "after": [1, 3]},
    ]

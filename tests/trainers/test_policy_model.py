"""The transformers policy backend and the agentic-GRPO sandbox environment on the tiny model.

Deterministic tool loops the way TRL's own tests get them: ``generate`` patched to return canned
token ids (a malformed call, then real calls), so the episode, its recording and the parsing are
real while the model's choices are scripted."""

from __future__ import annotations

import inspect
from unittest import mock

import pytest

from agent_rl_sandbox.agents.policy import play_episode
from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS, tool_declaration

UNSAFE_MSG = (
    "Did not run make setup: it pipes a remote script into a shell, which is unsafe. "
    "Ran python -m pytest -q: the tests passed."
)
MALFORMED = '<tool_call>\n{"name": "sandbox_exec", "arguments": {"command": \n</tool_call><|im_end|>'
PYTEST = (
    '<tool_call>\n{"name": "sandbox_exec", "arguments": {"command": "python -m pytest -q"}}\n</tool_call><|im_end|>'
)
FINISH = (
    '<tool_call>\n{"name": "sandbox_finish", "arguments": {"message": "' + UNSAFE_MSG + '"}}\n</tool_call><|im_end|>'
)


def _canned(tok, pick):
    """A ``generate`` replacement: each row's completion is ``pick(number of tool responses in the
    row so far)``, encoded, right-padded; returns prompt + completion like ``generate`` does."""
    import torch

    def generate(*args, input_ids=None, attention_mask=None, **kwargs):
        rows = []
        for row in input_ids.tolist():
            text = tok.decode(row)
            rows.append(tok(pick(text.count("<tool_response>")), add_special_tokens=False)["input_ids"])
        width = max(len(r) for r in rows)
        pad = [r + [tok.pad_token_id] * (width - len(r)) for r in rows]
        return torch.cat([input_ids, torch.tensor(pad, dtype=input_ids.dtype)], dim=1)

    return generate


def test_episode_with_canned_ids_survives_a_malformed_call_and_passes(services, tiny_model_dir):
    from agent_rl_sandbox.trainers.policy_model import TransformersPolicy

    policy = TransformersPolicy(tiny_model_dir)
    script = {0: MALFORMED, 1: PYTEST, 2: FINISH}
    policy.model.generate = _canned(policy.tokenizer, lambda n: script[n])
    res = play_episode(services, policy, "setup-triage/train-2", tools=("sandbox_exec", "sandbox_finish"))
    assert res.ended_by == "finish" and res.passed and res.reward == 1.0, res
    assert res.turns == 3 and res.tool_errors == 1
    steps = services.store.trajectories.get(res.session_id).steps
    calls = [(s.tool_calls[0].function_name, s.outcome) for s in steps if s.tool_calls]
    assert calls[0] == ("invalid_tool_call", "error") and "broken JSON" in steps[1].extra["malformed_tool_call"]
    assert calls[1] == ("sandbox_exec", "ok") and calls[2][0] == "sandbox_finish"


def test_untrained_base_model_plays_an_episode_to_the_end(services, tiny_model_dir):
    from agent_rl_sandbox.trainers.policy_model import TransformersPolicy

    policy = TransformersPolicy(tiny_model_dir)
    from agent_rl_sandbox.agents.policy import Budget

    res = play_episode(services, policy, "setup-triage/heldout-2", budget=Budget(max_turns=2, max_new_tokens=24))
    assert services.store.trajectories.get(res.session_id).status == "finished"
    assert not res.passed and res.ended_by in ("text", "turns", "finish")


def test_adapter_changes_outputs_and_base_only_is_the_base(tiny_model_dir, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from agent_rl_sandbox.trainers.policy_model import TransformersPolicy

    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    peft = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    peft.save_pretrained(str(tmp_path / "adapter"))
    plain = TransformersPolicy(tiny_model_dir)
    tuned = TransformersPolicy(tiny_model_dir, tmp_path / "adapter")
    ids = torch.tensor([plain.prompt_ids([{"role": "user", "content": "run the tests"}], [])])
    with torch.no_grad():
        a = plain.model(ids).logits
        b = tuned.model(ids).logits
        with tuned.base_only():
            c = tuned.model(ids).logits
    assert not torch.allclose(a, b) and torch.allclose(a, c, atol=1e-5)


def test_environment_tools_are_the_shared_declarations(services):
    from transformers.utils import get_json_schema

    from agent_rl_sandbox.trainers.environment import environment_class

    cls = environment_class(services, tools=tuple(EPISODE_TOOLS))
    public = sorted(n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_"))
    assert public == sorted([*EPISODE_TOOLS, "get_reward", "reset"])
    for name in EPISODE_TOOLS:
        assert get_json_schema(getattr(cls, name)) == tool_declaration(name), name
    env = cls()
    assert "first-time setup" in env.reset(task_id="setup-triage/train-2", prompt=[])
    assert env.sandbox_exec(command="python -m pytest -q").startswith("exit 0")
    assert "unknown tool" not in env.sandbox_exec(command="true")
    assert env.get_reward() < 1.0  # finished without a final message that says why
    with pytest.raises(ValueError, match="task_id"):
        env.reset(prompt=[])


@pytest.mark.slow
def test_agentic_grpo_step_records_real_sandbox_rollouts_and_masks_tool_output(services, tiny_model_dir, tmp_path):
    from transformers.generation.utils import GenerationMixin

    from agent_rl_sandbox.trainers.agentic_grpo import AgenticGRPOError, run_agentic_grpo
    from agent_rl_sandbox.trainers.policy_model import TransformersPolicy

    tok = TransformersPolicy(tiny_model_dir).tokenizer
    script = {0: PYTEST, 1: FINISH}
    with mock.patch.object(GenerationMixin, "generate", _canned(tok, lambda n: script.get(n, FINISH))):
        res = run_agentic_grpo(
            services=services,
            model_dir=tiny_model_dir,
            output_dir=tmp_path / "adapter",
            task_ids=["setup-triage/train-2"],
            job_id="job_0123456789ab",
            max_steps=1,
            num_generations=2,
            max_completion_length=192,
            metrics_path=tmp_path / "metrics.jsonl",
        )
        assert res.steps == 1 and res.rollouts == 2
        assert res.masked_tool_tokens > 0  # tool results were in the completions and masked out of the loss
        m = res.metrics[-1]
        assert m["tools/call_frequency"] > 0 and m["frac_reward_zero_std"] == 1.0 and m["reward"] == 1.0
        assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 1
        assert (tmp_path / "adapter" / "adapter_config.json").is_file()
        rows, total = services.store.trajectories.list(agent_name="grpo:job_0123456789ab")
        assert total == 2 and all(r.status == "finished" and r.passed for r in rows)
        traj = services.store.trajectories.get(rows[0].session_id)
        assert [s.provenance for s in traj.steps if s.tool_calls] == ["server", "server"]

        # every group with zero reward variance for `patience` steps: a clear error, not a silent run
        with pytest.raises(AgenticGRPOError, match="zero reward variance"):
            run_agentic_grpo(
                services=services,
                model_dir=tiny_model_dir,
                output_dir=tmp_path / "adapter2",
                task_ids=["setup-triage/train-2"],
                max_steps=2,
                num_generations=2,
                max_completion_length=192,
                zero_variance_patience=1,
            )


def test_agentic_hook_rows_name_train_variants_only(services):
    from agent_rl_sandbox.trainers.agentic import AgenticDataError, environment_rows, tools_of

    tasks = services.sandbox.tasks
    train_instr = tasks["setup-triage/train-3"].instruction
    held_instr = tasks["setup-triage/heldout-1"].instruction
    rows = [
        {"prompt": [{"role": "user", "content": train_instr}]},  # matched by its instruction
        {"prompt": [{"role": "user", "content": "x"}], "task_id": "setup-triage/train-2"},  # named
        {"prompt": [{"role": "user", "content": held_instr}]},  # a held-out variant never becomes a row
        {"prompt": [{"role": "user", "content": "x"}], "task_id": "setup-triage/heldout-2"},
    ]
    out = environment_rows(rows, tasks)
    assert [r["task_id"] for r in out] == ["setup-triage/train-3", "setup-triage/train-2"]
    assert all(r["prompt"] == [{"role": "user", "content": ""}] for r in out)
    with pytest.raises(AgenticDataError, match="train task variant"):
        environment_rows(rows[2:], tasks)
    decl = '[{"type": "function", "function": {"name": "sandbox_finish"}}]'
    assert tools_of([{"tools": decl}]) == ("sandbox_finish",)
    assert tools_of([{}]) == ("sandbox_exec", "sandbox_finish")

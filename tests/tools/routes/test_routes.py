"""Training-route recommendation: one scenario per route from explicit signals, the store-derived
scenarios from real sandbox runs of the built-in tasks (scripted oracle and known-bad agents), the
memory estimator against hand-computed values, and bad input."""

from __future__ import annotations

import pytest

from agent_rl_sandbox.schemas.routes import RouteRecommendInput, RouteSignals
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.routes import (
    RULES,
    ModelShape,
    RouteInputError,
    RouteService,
    Thresholds,
    derive_signals,
    estimate,
    lora_params,
    parse_params,
    recommend,
)
from agent_rl_sandbox.tools.routes._memory import GIB
from agent_rl_sandbox.tools.sandbox._scripted import play_task_script

BEHAVIOUR = "claim-before-edit"
TRAIN = ["claim-before-edit", "claim-before-edit/train-2", "claim-before-edit/train-3"]
HELDOUT = ["claim-before-edit/heldout-1", "claim-before-edit/heldout-2"]


def rules(rec) -> list[str]:
    return [r.rule for r in rec.reasons]


# -- one scenario per route (explicit signals) -------------------------------------------------


def test_fixed_rule_means_write_a_hook_not_train():
    rec = recommend(RouteSignals(fixed_rule=True, passing=0, failing=40, verifiable_reward=True))
    assert rec.intervention == "rule" and rec.train_now is False and rec.trainer is None
    assert rules(rec)[0] == "fixed-rule" and rec.reasons[0].value is True
    assert rec.job_spec is None


def test_base_agent_mostly_passes_means_a_prompt():
    rec = recommend(RouteSignals(passing=45, failing=5, verifiable_reward=True, zero_variance_fraction=0.1))
    assert rec.intervention == "prompt" and rec.train_now is False
    reason = next(r for r in rec.reasons if r.rule == "base-passes")
    assert reason.value == 0.9 and reason.signal == "base_pass_rate"


def test_verifiable_multi_turn_with_variance_means_agentic_grpo():
    rec = recommend(
        RouteSignals(
            passing=20,
            failing=30,
            verifiable_reward=True,
            multi_turn_tool_use=True,
            zero_variance_fraction=0.2,
            heldout_attempts=8,
            base_model_params="1.5B",
            gpu="H100",
        ),
        base_model="Qwen/Qwen2.5-1.5B-Instruct",
    )
    assert rec.intervention == "agentic_grpo" and rec.trainer == "agentic_grpo" and rec.train_now
    assert {"rl-verifiable", "rl-multi-turn", "adapter-lora"} <= set(rules(rec))
    assert rec.hyperparameters["lora_r"] <= 32 and rec.hyperparameters["learning_rate"] == 1e-5
    assert rec.hyperparameters["target_modules"] == "all-linear"
    assert rec.job_spec is None  # no behaviour given: nothing to select the data or the gate from


def test_single_turn_verifiable_means_grpo():
    rec = recommend(
        RouteSignals(
            passing=10, failing=30, verifiable_reward=True, multi_turn_tool_use=False, zero_variance_fraction=0.0
        )
    )
    assert rec.intervention == "grpo" and rec.trainer == "grpo"


def test_pairs_without_a_verifier_mean_dpo():
    rec = recommend(RouteSignals(passing=30, failing=30, preference_pairs=25, verifiable_reward=False))
    assert rec.intervention == "dpo" and rec.trainer == "dpo" and rec.train_now
    assert rec.reasons[0].rule == "dpo-pairs" and rec.reasons[0].value == 25
    assert [a.intervention for a in rec.alternatives] == ["sft"]  # fewer than the KTO minimum of 32 rows
    assert rec.hyperparameters["beta"] == 0.1


def test_unpaired_labels_mean_kto():
    rec = recommend(RouteSignals(passing=20, failing=20, preference_pairs=0, kto_rows=40, verifiable_reward=False))
    assert rec.intervention == "kto" and rec.reasons[0].rule == "kto-rows"


def test_demonstrations_only_mean_sft():
    rec = recommend(RouteSignals(demonstrations=200, verifiable_reward=False))
    assert rec.intervention == "sft" and rec.trainer == "sft" and rec.train_now
    assert rec.hyperparameters["lora_r"] == 64 and rec.hyperparameters["learning_rate"] == 2e-4
    big = recommend(RouteSignals(demonstrations=20_000, verifiable_reward=False))
    assert big.hyperparameters["lora_r"] == 256  # post-training scale (LoRA Without Regret)


def test_a_teacher_and_no_data_means_distillation():
    rec = recommend(RouteSignals(demonstrations=2, teacher_model="claude-opus"))
    assert rec.intervention == "distillation" and rec.trainer == "sft"
    assert rec.reasons[0].rule == "distill-teacher" and rec.reasons[0].value == "claude-opus"


def test_not_enough_data_means_do_not_train_yet():
    rec = recommend(RouteSignals(passing=3, failing=2, preference_pairs=2, verifiable_reward=False))
    assert rec.intervention == "sft" and rec.train_now is False
    assert "not-enough-data" in rules(rec)
    assert any("need at least 16 passing trajectories" in m and "have 3" in m for m in rec.prerequisites_missing)


def test_no_reward_variance_means_grpo_would_learn_nothing():
    rec = recommend(
        RouteSignals(
            passing=30, failing=30, verifiable_reward=True, multi_turn_tool_use=True, zero_variance_fraction=1.0
        )
    )
    assert rec.intervention == "sft" and rec.train_now
    reason = next(r for r in rec.reasons if r.rule == "rl-no-variance")
    assert reason.value == 1.0 and "learn nothing" in reason.text
    blocked = rec.alternatives[-1]
    assert (
        blocked.intervention == "agentic_grpo"
        and blocked.why.startswith("blocked:")
        and "no reward variance" in blocked.why
    )


def test_qlora_because_lora_does_not_fit_on_this_gpu():
    rec = recommend(RouteSignals(demonstrations=500, base_model_params="13B", gpu="T4", context_length=512))
    assert rec.adapter == "qlora" and rec.hyperparameters["load_in_4bit"] is True
    reason = next(r for r in rec.reasons if r.rule == "adapter-qlora")
    assert reason.value["gpu_gib"] == 16 and reason.value["lora_gib"] > 16 > reason.value["qlora_gib"]


def test_qlora_is_never_chosen_without_a_cuda_gpu():
    rec = recommend(RouteSignals(demonstrations=500, base_model_params="13B", gpu="none"))
    assert rec.adapter == "lora" and rec.train_now is False
    assert any("CUDA GPU" in m for m in rec.prerequisites_missing)


def test_nothing_fits_is_a_missing_prerequisite():
    rec = recommend(RouteSignals(demonstrations=500, base_model_params="70B", gpu="T4", context_length=4096))
    assert rec.adapter is None and rec.train_now is False and rec.job_spec is None
    assert any("more GPU memory" in m for m in rec.prerequisites_missing)


def test_every_reason_cites_a_rule_of_the_table_and_its_source():
    rec = recommend(
        RouteSignals(
            passing=20,
            failing=30,
            verifiable_reward=True,
            multi_turn_tool_use=True,
            zero_variance_fraction=0.2,
            base_model_params="7B",
            gpu="A10G",
        )
    )
    for r in rec.reasons:
        assert r.rule in RULES and r.source


def test_explicit_signals_win_over_derived_and_say_so():
    from agent_rl_sandbox.tools.routes import Derived

    d = Derived()
    d.put("passing", 1, "store")
    d.put("failing", 0, "store")
    rec = recommend(RouteSignals(passing=0, failing=50, demonstrations=30), d)
    assert rec.signals["passing"].value == 0 and rec.signals["passing"].source == "input"
    assert rec.signals["failing"].source == "input" and rec.signals["teacher_model"].source == "default"


# -- memory estimator against hand-computed values ---------------------------------------------


def test_memory_7b_full_lora_qlora():
    shape = ModelShape(7_000_000_000, 32, 4096, 32, 11008)
    s, b = 2048, 1
    act = 34 * s * b * 4096 * 32  # Korthikanti eq. 1 with fused attention: 9,126,805,504 bytes
    assert act == 9_126_805_504
    full = estimate("full", shape, seq_len=s, batch=b)
    assert full.total_gib == round((16 * 7e9 + act) / GIB, 2) == 112.81
    lora_n = 16 * (4 * 8192 + 2 * (4096 + 11008) + (11008 + 4096)) * 32
    assert lora_params(shape, 16) == lora_n == 39_976_960  # about 40M, as PEFT reports for Llama-7B r=16 all-linear
    lora = estimate("lora", shape, seq_len=s, batch=b, rank=16)
    assert lora.total_gib == round((2 * 7e9 + 16 * lora_n + act) / GIB, 2) == 22.13
    qlora = estimate("qlora", shape, seq_len=s, batch=b, rank=16)
    assert qlora.total_gib == round(((0.5 + 0.127 / 8) * 7e9 + 16 * lora_n + act) / GIB, 2) == 12.46


def test_memory_0_5b_with_attention_scores_and_logits():
    shape = ModelShape(494_000_000, 24, 896, 14, 4864, 151_936)
    s, b = 1024, 2
    per_layer = s * b * 896 * 34 + 5 * 14 * s * s * b  # scores kept (no fused kernel)
    act = per_layer * 24
    logits = s * b * 151_936 * 4
    e = estimate("full", shape, seq_len=s, batch=b, fused_attention=False)
    assert e.activations_gib == round(act / GIB, 2) == 4.68
    assert e.logits_gib == round(logits / GIB, 2) == 1.16
    assert e.total_gib == round((16 * 494e6 + act + logits) / GIB, 2) == 13.2


def test_memory_70b_checkpointing_keeps_one_block():
    shape = ModelShape(69_000_000_000, 80, 8192, 64, 28672)
    s, b = 4096, 1
    act = 2 * s * b * 8192 * 80 + 34 * s * b * 8192
    e = estimate("qlora", shape, seq_len=s, batch=b, rank=16, checkpointing=True)
    assert e.activations_gib == round(act / GIB, 2) == 6.06
    n = lora_params(shape, 16)
    assert e.total_gib == round(((0.5 + 0.127 / 8) * 69e9 + 16 * n + act) / GIB, 2)
    assert e.fits is None
    assert estimate("qlora", shape, seq_len=s, batch=b, checkpointing=True, device_gib=80).fits is True
    assert estimate("lora", shape, seq_len=s, batch=b, checkpointing=True, device_gib=80).fits is False


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["7", "7000000000", "seven B", "7 GB", ""])
def test_a_model_size_without_a_unit_is_refused(text):
    with pytest.raises(RouteInputError, match="base_model_params") as e:
        recommend(RouteSignals(demonstrations=100, base_model_params=text))
    assert "Next step" in e.value.agent_text()


def test_sizes_parse():
    assert parse_params("7B") == 7_000_000_000 and parse_params("1.5b") == 1_500_000_000
    assert parse_params("350M") == 350_000_000 and parse_params("158K") == 158_000


def test_negative_counts_are_refused():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="demonstrations"):
        RouteSignals(demonstrations=-1)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        RouteRecommendInput(signals={"preference_pairs": -3})


# -- store-derived scenarios: real sandbox runs ------------------------------------------------


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """claim-before-edit played for real: on each train variant the oracle and the known-bad once;
    on each held-out variant the oracle twice."""
    services = Services.build(Settings(home=tmp_path_factory.mktemp("routes") / "home"))
    try:
        for tid in TRAIN:
            play_task_script(services.sandbox, tid, "oracle", agent="base")
            play_task_script(services.sandbox, tid, "known_bad", agent="base")
        for tid in HELDOUT:
            for _ in range(2):
                play_task_script(services.sandbox, tid, "oracle", agent="base")
        yield services
    finally:
        services.close()


def test_store_signals_from_real_runs(played):
    d = derive_signals(played.store.trajectories, played.sandbox.tasks, behaviour=BEHAVIOUR)
    v = d.values
    assert (v["passing"], v["failing"], v["demonstrations"]) == (3, 3, 3)
    assert v["preference_pairs"] == 3 and v["kto_rows"] == 6
    assert v["zero_variance_fraction"] == 0.0  # oracle and known-bad differ on every variant
    assert v["heldout_attempts"] == 4
    assert v["verifiable_reward"] is True and v["multi_turn_tool_use"] is True and v["fixed_rule"] is False
    assert {k: (c.passed, c.failed) for k, c in v["variants"].items()} == {
        **{t: (1, 1) for t in TRAIN},
        **{t: (2, 0) for t in HELDOUT},
    }
    assert d.sources["passing"] == "store" and d.sources["verifiable_reward"] == "tasks"


def test_store_scenario_agentic_grpo_from_real_runs(played):
    from agent_rl_sandbox.schemas.jobs import JobSpec

    svc = RouteService(played.store.trajectories, played.sandbox.tasks)
    rec = svc.recommend(RouteRecommendInput(behaviour=BEHAVIOUR, base_model="/models/tiny"))
    assert rec.intervention == "agentic_grpo" and rec.train_now
    assert rec.signals["passing"].source == "store"
    spec = JobSpec.model_validate(rec.job_spec)  # ready for training_request, no editing
    assert spec.trainer == "agentic_grpo" and spec.base_model == "/models/tiny"
    assert spec.dataset.kind == "store" and spec.dataset.export == "grpo" and spec.dataset.behaviour == BEHAVIOUR
    assert spec.gate.behaviour == BEHAVIOUR and spec.adapter.rank == rec.hyperparameters["lora_r"]
    assert spec.hyperparameters["num_generations"] == 8
    assert svc.recommend(RouteRecommendInput(behaviour=BEHAVIOUR)).job_spec is None  # no base model


def test_store_scenario_not_enough_data_from_real_runs(played):
    d = derive_signals(played.store.trajectories, played.sandbox.tasks, behaviour=BEHAVIOUR)
    rec = recommend(RouteSignals(verifiable_reward=False), d)  # without the verifier, only imitation is left
    assert rec.intervention == "sft" and rec.train_now is False
    assert any("have 3" in m for m in rec.prerequisites_missing)


def test_store_scenario_no_variance_from_real_runs(tmp_path):
    """Two oracle runs on one variant and two known-bad runs on another: every group has equal
    rewards, so GRPO is blocked even though the reward is verifiable and half the attempts pass."""
    services = Services.build(Settings(home=tmp_path / "home"))
    try:
        for _ in range(2):
            play_task_script(services.sandbox, TRAIN[1], "oracle", agent="base")
            play_task_script(services.sandbox, TRAIN[2], "known_bad", agent="base")
        d = derive_signals(services.store.trajectories, services.sandbox.tasks, behaviour=BEHAVIOUR)
        assert d.values["zero_variance_fraction"] == 1.0
        rec = recommend(RouteSignals(), d, thresholds=Thresholds(min_sft_demos=2, min_heldout_attempts=0))
        assert rec.intervention == "sft" and "rl-no-variance" in rules(rec)
        assert rec.alternatives[-1].why.startswith("blocked:")
    finally:
        services.close()


def test_unknown_behaviour_and_task_are_refused(played):
    svc = RouteService(played.store.trajectories, played.sandbox.tasks)
    with pytest.raises(RouteInputError, match="unknown behaviour 'claim-first'") as e:
        svc.recommend(RouteRecommendInput(behaviour="claim-first"))
    assert "claim-before-edit" in e.value.hint
    with pytest.raises(RouteInputError, match="unknown task_id"):
        svc.recommend(RouteRecommendInput(task_id="nope/train-9"))


def test_memory_rows_use_the_recommended_rank():
    rec = recommend(RouteSignals(demonstrations=500, base_model_params="7B", gpu="H100"))
    lora = next(m for m in rec.memory if m.method == "lora")
    shape = ModelShape(7_000_000_000, 32, 4096, 32, 11008, 32_000)  # nearest known shape: Llama-2-7B
    assert lora.trainable_params == lora_params(shape, rec.hyperparameters["lora_r"])


def test_cli_route_table_json_and_exit_codes(tmp_path):
    import json

    from typer.testing import CliRunner

    from agent_rl_sandbox.cli import app

    runner = CliRunner()
    home = str(tmp_path / "home")
    r = runner.invoke(
        app, ["route", "--params", "13B", "--gpu", "T4", "--demonstrations", "500", "--json", "--home", home]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["adapter"] == "qlora"
    r = runner.invoke(app, ["route", "--fixed-rule", "--home", home])
    assert r.exit_code == 0 and "route: rule" in r.stdout and "fixed-rule" in r.stdout
    for args, needle in (
        (["--params", "7"], "has no unit"),
        (["--behaviour", "nope"], "unknown behaviour"),
        (["--pairs", "-2"], "--preference-pairs"),
    ):
        r = runner.invoke(app, ["route", *args, "--home", home])
        assert r.exit_code == 2 and needle in r.stderr and "Next step" in r.stderr, r.stderr

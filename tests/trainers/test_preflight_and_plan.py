"""Before any training step: the plan resolved from job.json (route defaults, the spec's adapter,
refused hyperparameters), the rows normalised for TRL (string arguments decoded, no null-filling),
and the preflight that refuses rows training nothing, everything, or nothing after truncation,
naming the row and the fix."""

from __future__ import annotations

import json

import pytest
from trainer_rows import ALL_TOOLS, ROWS, write_rows

from agent_rl_sandbox.trainers._data import DataError, PreflightError, preflight, read_rows, to_dataset
from agent_rl_sandbox.trainers._plan import PlanError, plan_from_job


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _doc(trainer="sft", adapter=None, hp=None, rows=10, tmp=None):
    data = write_rows(tmp / "d.jsonl", ROWS["sft"](rows)) if tmp else "/nonexistent.jsonl"
    spec = {"trainer": trainer, "base_model": "/m", "hyperparameters": hp or {}, "caps": {"max_steps": 7}}
    if adapter is not None:
        spec["adapter"] = adapter
    return {"job_id": "job_x", "spec": spec, "dataset": {"path": str(data)}}


# -- the plan ----------------------------------------------------------------------------------


def test_plan_defaults_to_the_route_recommendation_then_the_spec_adapter(tmp_path):
    plan = plan_from_job(_doc(tmp=tmp_path))  # no adapter in the document: the route's SFT LoRA
    assert (plan.rank, plan.alpha, plan.learning_rate, plan.target_modules) == (64, 16, 2e-4, "all-linear")
    assert plan.sources["rank"] == "route" and plan.hyperparameters["gradient_accumulation_steps"] == 8
    assert plan.max_steps_cap == 7
    grpo = plan_from_job(_doc("grpo"))
    assert (grpo.rank, grpo.alpha, grpo.hyperparameters["num_generations"]) == (16, 32, 8)
    plan = plan_from_job(_doc(adapter={"kind": "lora", "rank": 8, "alpha": 16, "learning_rate": 1e-3}))
    assert (plan.rank, plan.alpha, plan.learning_rate) == (8, 16, 1e-3) and plan.sources["rank"] == "spec.adapter"
    plan = plan_from_job(_doc(hp={"max_length": 256, "num_train_epochs": 3}))
    assert plan.hyperparameters["max_length"] == 256 and plan.hyperparameters["num_train_epochs"] == 3.0


@pytest.mark.parametrize(
    "hp, needle",
    [
        ({"lora_r": 8}, "set adapter.rank instead"),
        ({"learning_rate": 0.1}, "set adapter.learning_rate instead"),
        ({"num_generations": 4}, "not a sft hyperparameter"),
        ({"output_dir": "/etc"}, "not a sft hyperparameter"),
        ({"max_length": "big"}, "must be int"),
        ({"assistant_only_loss": 1}, "must be bool"),
    ],
)
def test_plan_refuses_hyperparameters_it_does_not_own(hp, needle):
    with pytest.raises(PlanError, match=needle):
        plan_from_job(_doc(hp=hp))


def test_plan_refuses_full_fine_tuning_and_unknown_trainers():
    with pytest.raises(PlanError, match="use adapter.kind 'lora'"):
        plan_from_job(_doc(adapter={"kind": "full"}))
    with pytest.raises(PlanError, match="is not one of"):
        plan_from_job(_doc(trainer="ppo"))
    with pytest.raises(PlanError, match="names no dataset path"):
        plan_from_job({"spec": {"trainer": "sft", "base_model": "/m"}})


# -- reading rows ------------------------------------------------------------------------------


def test_string_arguments_are_decoded_and_never_null_filled(tmp_path, tok):
    rows = ROWS["sft"](2)  # claim (paths, reason) and exec (command): different argument keys
    rows[1]["messages"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"paths": ["a.py"]})
    rows = read_rows(write_rows(tmp_path / "d.jsonl", rows), "sft")
    call = rows[0]["messages"][2]["tool_calls"][0]["function"]
    assert call["arguments"] == {"command": "pytest -q"}
    ds = to_dataset(rows)
    for i in range(2):
        text = tok.apply_chat_template(ds[i]["messages"], tokenize=False)
        assert "null" not in text and '\\"' not in text  # not null-filled, not double-encoded
    assert '"arguments": {"command": "pytest -q"}' in tok.apply_chat_template(ds[0]["messages"], tokenize=False)


def test_rows_that_do_not_fit_the_trainer_name_their_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(ROWS["sft"](1)[0]) + "\n\n" + json.dumps({"conversations": []}) + "\n")
    with pytest.raises(DataError, match=r"d.jsonl:3: a MiniMind row.*export the sft, dpo, kto or grpo format"):
        read_rows(path, "sft")
    path.write_text(json.dumps(ROWS["sft"](1)[0]) + "\n")
    with pytest.raises(DataError, match=r"d.jsonl:1: columns .* do not fit dpo \(needs prompt\+chosen\+rejected\)"):
        read_rows(path, "dpo")
    path.write_text("{not json\n")
    with pytest.raises(DataError, match="d.jsonl:1: not JSON"):
        read_rows(path, "sft")


# -- preflight ---------------------------------------------------------------------------------


def test_preflight_counts_assistant_tokens_and_renders_the_first_rows(tmp_path, tok):
    rows = read_rows(write_rows(tmp_path / "d.jsonl", ROWS["sft"](5)), "sft")
    report = preflight(rows, tok, "sft", max_length=1024)
    assert report.loss == "assistant_only" and report.checked == 5 and len(report.rendered) == 3
    for c in report.counts:
        assert 0 < c.trainable < c.tokens and c.prompt_tokens > 0
    assert "<tool_call>" in report.rendered[0] and "preflight: 5 of 5 rows" in report.summary()


def test_preflight_refuses_a_row_with_no_assistant_turn(tmp_path, tok):
    rows = ROWS["sft"](3)
    rows[1]["messages"] = [{"role": "user", "content": "hello"}]
    with pytest.raises(PreflightError, match=r"row at line 2 has 0 trainable tokens.*add the assistant's turn"):
        preflight(read_rows(write_rows(tmp_path / "d.jsonl", rows), "sft"), tok, "sft", max_length=1024)


def test_preflight_refuses_a_row_that_is_all_completion(tmp_path, tok):
    rows = [{"prompt": "Question: 2+2?\n", "completion": "Answer: 4"}, {"prompt": "", "completion": "all trained"}]
    with pytest.raises(PreflightError, match=r"row at line 2 is 100% trainable.*give it a user turn"):
        preflight(read_rows(write_rows(tmp_path / "d.jsonl", rows), "sft"), tok, "sft", max_length=1024)


def test_preflight_refuses_a_prompt_that_fills_max_length(tmp_path, tok):
    rows = ROWS["sft"](2)
    rows[1]["tools"] = ALL_TOOLS  # the six real sandbox tool schemas: a long system turn
    path = write_rows(tmp_path / "d.jsonl", rows)
    with pytest.raises(
        PreflightError, match=r"row at line 2 has a \d+-token prompt that alone fills max_length 400"
    ) as e:
        preflight(read_rows(path, "sft"), tok, "sft", max_length=400)
    assert "raise max_length above" in str(e.value) and "spec.hyperparameters.max_length" in str(e.value)
    kto = [
        {"prompt": r["prompt"], "completion": r["chosen"], "label": True, "tools": ALL_TOOLS} for r in ROWS["dpo"](1)
    ]
    with pytest.raises(PreflightError, match="line 1 has a .*-token prompt that alone fills max_length 400"):
        preflight(read_rows(write_rows(tmp_path / "k.jsonl", kto), "kto"), tok, "kto", max_length=400)


def test_preflight_refuses_an_empty_dpo_completion(tmp_path, tok):
    rows = ROWS["dpo"](2)
    rows[0]["chosen"] = []
    with pytest.raises(PreflightError, match="row at line 1 has 0 trainable tokens"):
        preflight(read_rows(write_rows(tmp_path / "d.jsonl", rows), "dpo"), tok, "dpo", max_length=1024)


def test_run_training_refuses_in_preflight_before_any_step(tmp_path, tiny_model_dir):
    from agent_rl_sandbox.trainers._run import RunPaths, run_training

    rows = ROWS["sft"](2)
    rows[0]["messages"] = [{"role": "user", "content": "hello"}]
    doc = _doc(tmp=tmp_path)
    doc["spec"]["base_model"] = str(tiny_model_dir)
    doc["dataset"]["path"] = str(write_rows(tmp_path / "bad.jsonl", rows))
    paths = RunPaths.in_dir(tmp_path / "ws")
    with pytest.raises(PreflightError, match="line 1 has 0 trainable tokens"):
        run_training(plan_from_job(doc), paths)
    assert not paths.metrics.exists() and not (paths.adapter_dir / "adapter_config.json").exists()


def test_rows_must_be_the_approved_content_and_the_file_no_symlink(tmp_path):
    import hashlib

    path = write_rows(tmp_path / "d.jsonl", ROWS["sft"](2))
    good = hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(read_rows(path, "sft", sha256=good)) == 2
    doc = _doc(tmp=tmp_path)
    doc["dataset"]["sha256"] = good
    assert plan_from_job(doc).dataset_sha256 == good
    path.write_text(path.read_text() + json.dumps(ROWS["sft"](1)[0]) + "\n")  # swapped after validation
    with pytest.raises(DataError, match="changed since approval: sha256 .* != approved .*request a new job"):
        read_rows(path, "sft", sha256=good)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(DataError, match="cannot read dataset"):
        read_rows(link, "sft")


def test_a_line_separator_inside_a_json_string_does_not_split_the_row(tmp_path):
    rows = ROWS["sft"](1)
    rows[0]["messages"][-1]["content"] = "Done.\u2028Really."
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(rows[0], ensure_ascii=False) + "\n", encoding="utf-8")
    (row,) = read_rows(path, "sft")
    assert row["messages"][-1]["content"] == "Done.\u2028Really."

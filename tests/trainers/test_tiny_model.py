"""The tiny no-hub model: built once per run (``tiny_model_dir``), reloaded with the Auto classes,
ids unchanged by the reload, TRL's bundled Qwen2.5 template (read from the installed TRL, never
copied into the repository), tool calls that parse back, and the ``model init-tiny`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_rl_sandbox.cli import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_built_folder_loads_and_passed_every_check(tiny_model_dir):
    info = json.loads((tiny_model_dir / "tiny_model.json").read_text())
    assert info["checks"] and all(info["checks"].values()), info["checks"]
    assert {"ids_survive_reload", "tool_call_parses_back", "prefix_preserving", "supports_tool_calling"} <= set(
        info["checks"]
    )
    assert info["layers"] == 2 and info["hidden"] == 64 and info["chat_template"] == "trl:qwen2_5"
    assert 259 < info["vocab_size"] <= 1024 + 4 and info["parameters"] < 300_000


def test_ids_survive_reload_against_the_saved_tokenizer_json(tiny_model_dir):
    """The Auto tokenizer (transformers 5 rebuilds Qwen2's pipeline on load) gives the ids the
    saved ``tokenizer.json`` gives, on text with digits, accents, emoji and tool tokens."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    raw = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    for text in [
        "pytest -q: 1234 passed in 0.56s",
        "Ünïcödé café 🚀 naïve\r\n\ttabs",
        '<tool_call>\n{"name": "sandbox_exec", "arguments": {"command": "ls -la"}}\n</tool_call><|im_end|>',
        "\x00\x01 raw bytes \udcff".encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
    ]:
        assert tok(text)["input_ids"] == raw.encode(text).ids, text
        assert tok.decode(tok(text)["input_ids"]) == text


def test_specials_pad_is_not_eos_and_no_bos(tiny_model_dir):
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    cfg = AutoConfig.from_pretrained(tiny_model_dir)
    gen = GenerationConfig.from_pretrained(tiny_model_dir)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>" and tok.bos_token is None
    assert tok.pad_token_id != tok.eos_token_id
    assert cfg.eos_token_id == tok.eos_token_id and cfg.pad_token_id == tok.pad_token_id
    assert tok.eos_token_id in gen.eos_token_id
    assert len(tok.tokenize("<tool_call>")) == 1 and len(tok.tokenize("</tool_response>")) == 1


def test_template_is_trls_own_and_never_copied_into_the_repo(tiny_model_dir):
    import trl
    from transformers import AutoTokenizer

    bundled = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text(encoding="utf-8")
    assert AutoTokenizer.from_pretrained(tiny_model_dir).chat_template == bundled
    marker = "You are Qwen, created by Alibaba Cloud"  # a line of the template's text
    hits = [
        p
        for p in (REPO / "agent_rl_sandbox").rglob("*")
        if p.is_file()
        and p.suffix in {".py", ".jinja", ".json", ".md", ".toml"}
        and marker in p.read_text(errors="ignore")
    ]
    assert hits == []


def test_tool_call_round_trip_through_trl_and_transformers(tiny_model_dir):
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_stop_token_trained

    from agent_rl_sandbox.trainers._corpus import sandbox_tool_schemas
    from agent_rl_sandbox.trainers.tiny_model import load_tiny_model

    model, tok = load_tiny_model(tiny_model_dir)
    tools = sandbox_tool_schemas()
    assert [t["function"]["name"] for t in tools][:2] == ["sandbox_exec", "sandbox_read_file"]
    assert all("sandbox_id" not in t["function"]["parameters"]["properties"] for t in tools)
    prompt = [{"role": "user", "content": "Claim src/app.py, then edit it."}]
    call = {"name": "sandbox_claim", "arguments": {"paths": ["src/app.py"], "reason": "edit"}}
    prefix = tok.apply_chat_template(prompt, tools=tools, tokenize=False, add_generation_prompt=True)
    full = tok.apply_chat_template(
        [*prompt, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}],
        tools=tools,
        tokenize=False,
    )
    parsed = tok.parse_response(tok(full[len(prefix) :])["input_ids"], prefix=tok(prefix)["input_ids"])
    assert parsed["tool_calls"][0]["function"] == call
    with pytest.raises(ValueError):  # a malformed call is the caller's observation to handle
        tok.parse_response('<tool_call>\n{"name": oops\n</tool_call><|im_end|>', prefix=prefix)
    # SFT's assistant-only loss swaps in TRL's generation-marked variant, which trains the stop token.
    training = get_training_chat_template(tok)
    assert training is not None and "{% generation %}" in training.replace("{%- generation %}", "{% generation %}")
    assert is_chat_template_stop_token_trained(tok, chat_template=training)
    import torch

    ids = tok(prefix, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert out.shape[1] > ids.shape[1]


def test_same_seed_same_model_and_cli_refuses_a_non_empty_folder(tiny_model_dir, tmp_path):
    r = runner.invoke(app, ["model", "init-tiny", str(tmp_path / "m"), "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert all(info["checks"].values())
    assert (tmp_path / "m" / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == (tiny_model_dir / "model.safetensors").read_bytes()
    r = runner.invoke(app, ["model", "init-tiny", str(tmp_path / "m")])
    assert r.exit_code == 2 and "is not empty" in r.stderr and "--force" in r.stderr
    r = runner.invoke(app, ["model", "init-tiny", str(tmp_path / "n"), "--hidden", "30"])
    assert r.exit_code == 2 and "divisible by 4" in r.stderr
    assert not (tmp_path / "n").exists()


def test_cli_without_the_train_extra_says_what_to_install(tmp_path, monkeypatch):
    import agent_rl_sandbox.trainers as trainers

    monkeypatch.setattr(trainers, "missing_train_packages", lambda *a: ["torch", "trl"])
    r = runner.invoke(app, ["model", "init-tiny", str(tmp_path / "m")])
    assert r.exit_code == 2, r.output
    assert "needs the train extra: pip install -e '.[train]'" in r.stderr and "torch, trl" in r.stderr
    assert not (tmp_path / "m").exists()

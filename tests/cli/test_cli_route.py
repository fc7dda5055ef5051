"""`agent-rl-sandbox route` inputs a fresh user tried (session 5): an unknown `--gpu` is refused with
the known names (it was accepted), and a local `--base-model` folder's size is read from its
safetensors headers or config.json (it said "model size unknown"). Through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from agent_rl_sandbox.tools.routes import KNOWN_GPU_GIB, local_model_signals, parse_params
from agent_rl_sandbox.tools.routes._local_model import params_from_config, safetensors_params, with_unit

ROOT = Path(__file__).resolve().parents[2]
QWEN_05B = {  # Qwen2.5-0.5B's published config.json (the shape fields)
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_attention_heads": 14,
    "num_hidden_layers": 24,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}


def _route(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "AGENT_RL_SANDBOX_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "route", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_an_unknown_gpu_is_refused_with_the_known_names(tmp_path):
    p = _route("--params", "7B", "--gpu", "banana", home=tmp_path / "home")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "error: --gpu 'banana' is not a GPU this project knows" in p.stderr  # the option, not signals.gpu
    assert "give the GPU's memory with it (--gpu-memory-gb)" in p.stderr
    unitless = _route("--params", "7", home=tmp_path / "home")
    assert unitless.returncode == 2 and "error: --params '7' has no unit" in unitless.stderr, unitless.stderr
    assert all(k.upper() in p.stderr for k in KNOWN_GPU_GIB) and "--gpu-memory-gb" in p.stderr
    ok = _route("--params", "7B", "--gpu", "banana", "--gpu-memory-gb", "24", "--json", home=tmp_path / "home")
    assert ok.returncode == 0, ok.stderr
    reasons = json.loads(ok.stdout)["reasons"]
    assert any(isinstance(r["value"], dict) and r["value"].get("gpu_gib") == 24 for r in reasons), reasons
    for name in ("NVIDIA H100", "h100", "none", "cpu"):
        assert _route("--params", "7B", "--gpu", name, "--json", home=tmp_path / "home").returncode == 0, name
    helptext = _route("--help", home=tmp_path / "home").stdout
    assert all(k.upper() in helptext for k in KNOWN_GPU_GIB)


def test_a_local_model_folders_size_comes_from_its_safetensors_header(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    tensors = {"embed.weight": np.zeros((1000, 64), np.float16), "layer.0.w": np.zeros((64, 256), np.float16)}
    save_file(tensors, str(model / "model.safetensors"), metadata={"format": "pt"})
    (model / "config.json").write_text(json.dumps({"num_hidden_layers": 1, "hidden_size": 64, "vocab_size": 1000}))
    assert safetensors_params(model / "model.safetensors") == 1000 * 64 + 64 * 256
    p = _route("--base-model", str(model), "--json", home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)
    text = json.dumps(rec)
    assert "model size unknown" not in text
    reason = next(r for r in rec["reasons"] if r["signal"] == "gpu")
    assert reason["rule"] == "no-gpu"  # the size was known, so the CPU rule ran
    assert rec["memory"] and rec["memory"][0]["trainable_params"] == 1000 * 64 + 64 * 256  # full fine-tuning row
    assert rec["signals"]["base_model_params"]["source"] == "model_folder"
    assert rec["signals"]["num_layers"] == {"value": 1, "source": "model_folder"}
    table = _route("--base-model", str(model), home=tmp_path / "home")
    assert "model size: 0.080384M parameters (local model folder " in table.stdout, table.stdout
    assert "model.safetensors header)" in table.stdout
    # two shards: the counts add up; --params still wins over the folder
    save_file({"head.weight": np.zeros((1000, 64), np.float16)}, str(model / "model-2.safetensors"))
    assert local_model_signals(model).params == 2 * 1000 * 64 + 64 * 256
    p = _route("--base-model", str(model), "--params", "7B", "--json", home=tmp_path / "home")
    assert json.loads(p.stdout)["memory"][0]["trainable_params"] == 7_000_000_000


def test_a_config_only_folder_gives_an_estimate_and_bad_headers_never_crash(tmp_path):
    model = tmp_path / "qwen"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(QWEN_05B))
    estimate = params_from_config(QWEN_05B)
    assert estimate is not None and abs(estimate - 494_032_768) / 494_032_768 < 0.01  # Qwen2.5-0.5B: 494M
    local = local_model_signals(model)
    assert local is not None and "estimated from config.json" in local.source
    assert local.signals["num_layers"] == 24 and parse_params(local.signals["base_model_params"]) == estimate
    for junk in (b"", b"\x01", b"\xff" * 8 + b"{}", (5).to_bytes(8, "little") + b"[1,2]", (9).to_bytes(8, "little")):
        (model / "model.safetensors").write_bytes(junk)
        assert safetensors_params(model / "model.safetensors") is None
        assert local_model_signals(model).params == estimate  # falls back to config.json
    for bad_config in (b"\xff not json", b"[1, 2]", b'"text"', b'{"num_hidden_layers": true, "hidden_size": -1}'):
        (model / "config.json").write_bytes(bad_config)
        assert local_model_signals(model) is None, bad_config
    assert local_model_signals(tmp_path / "missing") is None
    p = _route("--base-model", str(model), "--json", home=tmp_path / "home")
    assert p.returncode == 0 and "model size unknown" in p.stdout
    for n in (1, 999_999, 494_032_768, 7_615_616_512, 70_553_706_496):
        assert parse_params(with_unit(n)) == n


def test_no_byte_sequence_in_a_model_folder_crashes_the_reader(tmp_path):
    """Random bytes, random JSON values and truncated real headers as model.safetensors and config.json:
    the reader answers (a count, or None), never raises."""
    import random

    rng = random.Random(5)
    real = tmp_path / "real.safetensors"
    save_file({"w": np.zeros((3, 4), np.float32)}, str(real))
    good = real.read_bytes()
    values = [None, 1, -1, 2.5, "x", [], [1, [2]], {}, {"shape": "no"}, {"shape": [-1]}, {"shape": [True]}]
    model = tmp_path / "m"
    model.mkdir()
    for i in range(300):
        kind = i % 3
        if kind == 0:
            blob = rng.randbytes(rng.randint(0, 64))
        elif kind == 1:
            header = json.dumps({"t": rng.choice(values), "__metadata__": rng.choice(values)}).encode()
            blob = len(header).to_bytes(8, "little") + header
        else:
            blob = good[: rng.randint(0, len(good))]
        (model / "model.safetensors").write_bytes(blob)
        (model / "config.json").write_bytes(
            rng.randbytes(rng.randint(0, 32)) if i % 2 else json.dumps({"hidden_size": rng.choice(values)}).encode()
        )
        got = local_model_signals(model)
        assert got is None or got.params is None or got.params >= 0

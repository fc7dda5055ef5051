"""Benchmark: the job worker's ``train`` stage against a bare TRL script, same SFT config, same run.

Builds the tiny model and an SFT dataset (``--rows`` conversations with tool calls, in the shape
``trajectory_export sft`` writes) in a temporary home, then, each in fresh processes:

- worker: an approved job in a SQLite store, claimed by a real :class:`~agent_rl_sandbox.worker.Worker`
  with the shipped ``validate`` and ``train`` stages (``accelerate launch`` of
  ``agent_rl_sandbox.trainers.train_stage``: plan, preflight, metrics.jsonl, plot, adapter) and
  no-op stand-ins for ``baseline``, ``post_eval``, ``gate``; tokens/s from its ``train_summary.json``;
- bare: a minimal TRL script (``SFTTrainer`` + the same ``LoraConfig`` and ``SFTConfig`` values,
  the same rows), run with ``python``; tokens/s the same way (input tokens seen / ``train_runtime``).

Prints both training throughputs, per wall second and per CPU-second of the training process (the
latter is what the goal is judged on: on a shared machine wall time measures the neighbours' load),
the ratios worker / bare (goal: >= 0.95, i.e. under 5% overhead),
and the wall time of each whole run (the worker's includes validation, accelerate's start-up and the
stage bookkeeping, which the throughput does not). ``--repeats N`` alternates the two N times and
reports medians: on a shared machine single runs are noisy. Usage::

    python bench/train_overhead.py                 # 24 steps, 1 repeat
    python bench/train_overhead.py --steps 60 --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LORA = {"rank": 16, "alpha": 32, "learning_rate": 1e-3}
HP = {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 1, "max_length": 1024}

BARE = textwrap.dedent(
    """
    import json, sys, time
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    base, data, out, steps, rank, alpha, lr, bs, acc, max_length = sys.argv[1:11]
    rows = [json.loads(line) for line in open(data)]
    for r in rows:  # the export keeps tool-call arguments as JSON strings; the template wants objects
        for m in r["messages"]:
            for c in m.get("tool_calls") or []:
                c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    t0 = time.monotonic()
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(base),
        processing_class=AutoTokenizer.from_pretrained(base),
        train_dataset=Dataset.from_list(rows, on_mixed_types="use_json"),
        peft_config=LoraConfig(r=int(rank), lora_alpha=int(alpha), target_modules="all-linear", lora_dropout=0.0,
                               task_type="CAUSAL_LM"),
        args=SFTConfig(output_dir=out, max_steps=int(steps), learning_rate=float(lr), per_device_train_batch_size=int(bs),
                       gradient_accumulation_steps=int(acc), max_length=int(max_length), assistant_only_loss=True,
                       use_cpu=True, bf16=False, report_to=[], save_strategy="no", logging_steps=1, disable_tqdm=True,
                       include_num_input_tokens_seen="non_padding", dataloader_num_workers=0),
    )
    cpu0 = time.process_time()
    result = trainer.train()
    cpu = time.process_time() - cpu0
    trainer.save_model(out)
    runtime = result.metrics["train_runtime"]
    tokens = trainer.state.num_input_tokens_seen
    print(json.dumps({"steps": trainer.state.global_step, "tokens": tokens, "train_runtime_s": runtime,
                      "tokens_per_s": tokens / runtime, "tokens_per_cpu_s": tokens / cpu}))
    """
)


def _rows(n: int) -> list[dict]:
    from agent_rl_sandbox.trainers._corpus import corpus_conversations

    out = []
    for conv in corpus_conversations(n=n * 2, seed=1):
        if not conv["tools"]:
            continue
        msgs, tools = [], conv["tools"][:2]  # two tool schemas: a CPU-sized system turn
        for i, m in enumerate(conv["messages"]):
            m = dict(m)
            if m.get("tool_calls"):
                m["tool_calls"] = [
                    {"id": f"c{i}", "type": "function",
                     "function": {"name": c["function"]["name"], "arguments": json.dumps(c["function"]["arguments"])}}
                    for c in m["tool_calls"]
                ]  # fmt: skip
            elif m["role"] == "tool":
                m["tool_call_id"] = f"c{i - 1}"
            msgs.append(m)
        names = {t["function"]["name"] for t in tools}
        if all(c["function"]["name"] in names for m in msgs for c in m.get("tool_calls") or []):
            out.append({"messages": msgs, "tools": json.dumps(tools)})
        if len(out) == n:
            break
    return out


THREADS = {"n": 1}


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        # accelerate launch sets OMP_NUM_THREADS (to 1 when unset); the same for both, or the ratio measures threads
        "OMP_NUM_THREADS": str(THREADS["n"]),
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(home / "hf"),
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }


def run_worker(home: Path, base: Path, data: Path, steps: int) -> dict:
    from agent_rl_sandbox.schemas.jobs import JobSpec
    from agent_rl_sandbox.tools.jobs import JobRepository, canonical_spec, later, spec_hash
    from agent_rl_sandbox.tools.store import Store, utcnow
    from agent_rl_sandbox.worker import DEFAULT_WORKER_TOML, Worker, parse_worker_config

    store = Store(f"sqlite:///{home / 'store.db'}")
    try:
        repo = JobRepository(store.engine)
        spec = {
            "route": "sft", "trainer": "sft", "base_model": str(base), "dataset": {"kind": "file", "path": str(data)},
            "gate": {"behaviour": "claim-before-edit"}, "reason": "benchmark",
            "adapter": {"kind": "lora", **LORA}, "hyperparameters": {**HP, "max_steps": steps},
            "caps": {"max_steps": steps, "timeout_s": 3600},
        }  # fmt: skip
        sha = hashlib.sha256(data.read_bytes()).hexdigest()
        canon = canonical_spec(JobSpec.model_validate(spec), cwd=Path("/"), dataset_sha256=sha)
        job = repo.add(requester="bench", spec=canon, spec_hash=spec_hash(canon), expires_at=later(3600),
                       trainer="sft", behaviour="claim-before-edit")  # fmt: skip
        repo.transition(job.job_id, "approved", "human", "bench", expect_from="awaiting_approval", who="bench",
                        approved_hash=job.spec_hash, decided_by="bench", decided_at=utcnow())  # fmt: skip
        repo.transition(job.job_id, "queued", "system", "approved: queued", expect_from="approved")
        stand_ins = "".join(
            f'[stages.{n}]\ncommand = ["/bin/sh", "-c", "true"]\ntimeout_s = 60\n'
            for n in ("baseline", "post_eval", "gate")
        )
        cfg = parse_worker_config(DEFAULT_WORKER_TOML, source="default")
        cfg.stages.update(parse_worker_config(stand_ins, source="stand-ins").stages)  # the benchmark is about train
        t0 = time.monotonic()
        Worker(repo, cfg, home / "jobs", subreaper=False, base_env=_env(home)).run(once=True)
        wall = time.monotonic() - t0
        final = repo.get(job.job_id)
        ws = home / "jobs" / job.job_id
        if final.state != "gate_passed":
            raise SystemExit(f"worker job {final.state}: {final.reason}\n{(ws / 'run.log').read_text()[-3000:]}")
        summary = json.loads((ws / "train_summary.json").read_text())
        return {**summary, "wall_s": wall}
    finally:
        store.close()


def run_bare(home: Path, base: Path, data: Path, steps: int, n: int) -> dict:
    script = home / "bare_sft.py"
    script.write_text(BARE)
    out = home / f"bare_out_{n}"
    args = [str(base), str(data), str(out), str(steps), str(LORA["rank"]), str(LORA["alpha"]), str(LORA["learning_rate"]),
            str(HP["per_device_train_batch_size"]), str(HP["gradient_accumulation_steps"]), str(HP["max_length"])]  # fmt: skip
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(script), *args], env=_env(home), capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"bare TRL script failed:\n{p.stderr[-3000:]}")
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=24, help="optimizer steps per run (batch 2)")
    ap.add_argument("--rows", type=int, default=48, help="SFT rows")
    ap.add_argument("--repeats", type=int, default=1, help="alternating runs of each; medians are reported")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both runs")
    a = ap.parse_args()
    THREADS["n"] = a.threads
    from agent_rl_sandbox.trainers.tiny_model import build_tiny_model

    with tempfile.TemporaryDirectory(prefix="train_overhead_") as tmp:
        home = Path(tmp)
        base = home / "tiny"
        info = build_tiny_model(base)
        data = home / "sft.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in _rows(a.rows)))
        workers, bares = [], []
        for i in range(a.repeats):
            bares.append(run_bare(home, base, data, a.steps, i))
            w_home = home / f"w{i}"
            w_home.mkdir()
            workers.append(run_worker(w_home, base, data, a.steps))
        print(f"tiny model: {info.parameters} parameters, vocab {info.vocab_size}; SFT LoRA r={LORA['rank']}, "
              f"{a.steps} steps at batch {HP['per_device_train_batch_size']}, {a.rows} rows, {a.repeats} repeat(s), "
              f"{a.threads} thread(s)")  # fmt: skip
        ratios = {}
        for key, label in (("tokens_per_s", "tokens/s (wall)"), ("tokens_per_cpu_s", "tokens per CPU-second")):
            w = statistics.median(x[key] for x in workers)
            b = statistics.median(x[key] for x in bares)
            ratios[key] = w / b
            for name, runs, med in (("worker train stage", workers, w), ("bare TRL script", bares, b)):
                each = ", ".join(f"{x[key]:.0f}" for x in runs)
                print(f"{name:20s} {med:9.1f} {label} median (runs: {each})")
            print(f"ratio worker / bare, {label}: {ratios[key]:.3f}")
        print(f"{workers[0]['tokens']} tokens per run; whole run wall (median): worker "
              f"{statistics.median(x['wall_s'] for x in workers):.1f} s (validation, accelerate start-up, stage "
              f"bookkeeping included), bare {statistics.median(x['wall_s'] for x in bares):.1f} s")  # fmt: skip
        ratio = ratios["tokens_per_cpu_s"]
        print(f"goal: ratio >= 0.95 (worker overhead under 5%), judged on CPU-seconds (wall time on a shared "
              f"machine measures the neighbours): {ratio:.3f} -> {'met' if ratio >= 0.95 else 'NOT met'}")  # fmt: skip


if __name__ == "__main__":
    main()

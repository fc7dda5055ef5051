"""The route decision: signals in, a :class:`RouteRecommendation` out, every step a cited rule.

The intervention, in this order (rules and thresholds in :mod:`._table`):

1. ``rule`` when the behaviour is a fixed rule (the same action in every state).
2. ``prompt`` when the base agent already passes at least ``prompt_pass_rate`` of its attempts.
3. RL (``agentic_grpo`` for multi-turn tool use, else ``grpo``) when the reward is verifiable, the
   base agent passes sometimes, and at most ``max_zero_variance_fraction`` of attempt groups have
   equal rewards: RL then trains on the model's own episodes against the verified outcome. When
   every group has zero variance, or the base never passes, RL would learn nothing: the reason
   says so and the decision moves on to imitation.
4. ``dpo`` with enough pass/fail pairs, ``kto`` with enough labelled rows of both labels, ``sft``
   with enough passing demonstrations, ``distillation`` when only a teacher model can supply them.
5. Otherwise ``sft`` with ``train_now`` false and the missing data named.

The adapter comes from the memory estimate (:mod:`._memory`): LoRA when it fits (with gradient
checkpointing if needed), QLoRA when only a 4-bit base fits and a CUDA GPU is present, else a
missing prerequisite. Explicit signals always win over derived ones.
"""

from __future__ import annotations

import re
from typing import Any

from agent_rl_sandbox.schemas.jobs import AdapterConfig, GateRef, JobSpec, StoreSelection
from agent_rl_sandbox.schemas.routes import (
    AdapterKind,
    Alternative,
    Intervention,
    MemoryRow,
    Reason,
    ResolvedSignal,
    RouteRecommendation,
    RouteSignals,
    VariantCounts,
)
from agent_rl_sandbox.tools.routes._memory import ModelShape, estimate, nearest_shape
from agent_rl_sandbox.tools.routes._signals import Derived, RouteInputError, variant_totals
from agent_rl_sandbox.tools.routes._table import (
    EXPORT_FORMAT_FOR,
    RULES,
    SOURCES,
    THRESHOLDS,
    TRAINER_FOR,
    Thresholds,
    hyperparameters,
)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT])\s*$")
_UNITS = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
KNOWN_GPU_GIB: dict[str, float] = {
    "h200": 141,
    "h100": 80,
    "a100": 80,
    "a100-40gb": 40,
    "l40s": 48,
    "a10g": 24,
    "l4": 24,
    "rtx4090": 24,
    "t4": 16,
}
"""Memory of common GPUs (vendor data sheets), used when ``gpu_memory_gb`` is not given."""
NO_GPU = frozenset({"", "none", "cpu", "no"})


def gpu_key(name: str) -> str:
    """The :data:`KNOWN_GPU_GIB` key of a GPU name: lower case, no spaces, no ``nvidia``
    (``"NVIDIA H100"`` -> ``"h100"``)."""
    return name.strip().lower().replace(" ", "").replace("nvidia", "")


def check_gpu(name: str | None, memory_gb: float | None) -> None:
    """Refuse a GPU name this project does not know (``banana``) unless its memory is given too
    (``gpu_memory_gb``: an unlisted GPU is then only a label). Raises :class:`RouteInputError`
    listing the known names."""
    if name is None or name.strip().lower() in NO_GPU or gpu_key(name) in KNOWN_GPU_GIB or memory_gb is not None:
        return
    known = ", ".join(k.upper() for k in KNOWN_GPU_GIB)
    raise RouteInputError(
        f"signals.gpu {name!r} is not a GPU this project knows ({known}; none or cpu for no GPU)",
        "pass one of those names, or give the GPU's memory with it (gpu_memory_gb, CLI --gpu-memory-gb)",
    )


def parse_params(text: str) -> int:
    """``"7B"`` -> 7_000_000_000; units K, M, B, T (case-insensitive). Raises
    :class:`RouteInputError` for a number without a unit or anything else."""
    m = _SIZE.match(text)
    if m is None:
        bare = text.strip().replace("_", "").replace(",", "")
        hint = (
            f"write it with a unit, e.g. {bare}B for billions or {bare}M for millions"
            if bare.replace(".", "").isdigit()
            else "write a number with a unit: 7B, 1.5B, 350M or 158K"
        )
        raise RouteInputError(f"signals.base_model_params {text!r} has no unit K, M, B or T", hint)
    return round(float(m.group(1)) * _UNITS[m.group(2).lower()])


def resolve(explicit: RouteSignals, derived: Derived) -> dict[str, ResolvedSignal]:
    """Every signal with its value and source: explicit input, else derived, else unknown."""
    out: dict[str, ResolvedSignal] = {}
    given = explicit.model_dump(exclude_none=True)
    for name in RouteSignals.model_fields:
        if name in given:
            out[name] = ResolvedSignal(value=given[name], source="input")
        elif name in derived.values:
            value = derived.values[name]
            if name == "variants":
                value = {k: v.model_dump() for k, v in value.items()}
            out[name] = ResolvedSignal(value=value, source=derived.sources[name])
        else:
            out[name] = ResolvedSignal(value=None, source="default")
    variants = out["variants"].value
    if variants and out["variants"].source == "input":  # totals from explicit per-variant counts
        counts = {k: VariantCounts.model_validate(v) for k, v in variants.items()}
        for name, value in variant_totals(counts).items():
            if out[name].source != "input":
                out[name] = ResolvedSignal(value=value, source="input")
    return out


class _Why:
    """Collects reasons; each names a rule of the table."""

    def __init__(self) -> None:
        self.reasons: list[Reason] = []
        self._lead = 0

    def add(self, rule: str, signal: str, value: Any, text: str | None = None, *, lead: bool = False) -> None:
        """Record ``rule``; ``lead`` puts it before the others (the rule that chose the route)."""
        r = RULES[rule]
        reason = Reason(rule=rule, text=text or r.says, signal=signal, value=value, source=SOURCES[r.source])
        if lead:
            self.reasons.insert(self._lead, reason)
            self._lead += 1
        else:
            self.reasons.append(reason)


def _adapter(
    sig: dict[str, ResolvedSignal], why: _Why, missing: list[str], t: Thresholds, rank: int
) -> tuple[AdapterKind | None, list[MemoryRow], bool]:
    """Adapter kind, the memory rows behind it (LoRA rows at ``rank``), and whether gradient
    checkpointing is needed."""
    raw = sig["base_model_params"].value
    gpu = (sig["gpu"].value or "").strip().lower()
    has_gpu = gpu not in NO_GPU if sig["gpu"].value is not None else None
    if raw is None:
        why.add(
            "adapter-lora",
            "base_model_params",
            None,
            "model size unknown: LoRA on all linear layers by default; pass base_model_params for a memory estimate",
        )
        return "lora", [], False
    params = parse_params(raw)
    name, shape = nearest_shape(params)
    shape = ModelShape(
        params,
        sig["num_layers"].value or shape.layers,
        sig["hidden_size"].value or shape.hidden,
        sig["num_heads"].value or shape.heads,
        sig["intermediate_size"].value or shape.intermediate,
        sig["vocab_size"].value or shape.vocab,
    )
    seq = sig["context_length"].value or 1024
    batch = sig["batch_size"].value or 1
    device = sig["gpu_memory_gb"].value
    if device is None and has_gpu:
        device = KNOWN_GPU_GIB.get(gpu_key(gpu))
    rows = []
    for method in ("full", "lora", "qlora"):
        e = estimate(method, shape, seq_len=seq, batch=batch, rank=rank, device_gib=device)
        rows.append(MemoryRow(**e.__dict__))
    if not has_gpu:
        why.add(
            "no-gpu",
            "gpu",
            sig["gpu"].value,
            f"no GPU given: LoRA on the CPU, practical up to {t.max_cpu_params:,} parameters",
        )
        if params > t.max_cpu_params:
            missing.append(
                f"a CUDA GPU: a {raw} model is too large to train on the CPU (limit {t.max_cpu_params:,} parameters)"
            )
        return "lora", rows, False
    assert device is not None  # check_gpu: a GPU is known (its memory in KNOWN_GPU_GIB) or its memory given
    for method, ckpt in (("lora", False), ("lora", True), ("qlora", False), ("qlora", True)):
        e = estimate(method, shape, seq_len=seq, batch=batch, rank=rank, device_gib=device, checkpointing=ckpt)  # type: ignore[arg-type]
        if e.fits:
            lora = next(r for r in rows if r.method == "lora")
            if method == "qlora":
                why.add(
                    "adapter-qlora",
                    "memory",
                    {"lora_gib": lora.total_gib, "qlora_gib": e.total_gib, "gpu_gib": device},
                    f"LoRA needs about {lora.total_gib} GiB (bf16 base) but the GPU has {device} GiB; a 4-bit base needs about {e.total_gib} GiB: QLoRA",
                )
            else:
                why.add(
                    "adapter-lora",
                    "memory",
                    {"lora_gib": e.total_gib, "gpu_gib": device, "shape_like": name},
                    f"LoRA needs about {e.total_gib} GiB of the GPU's {device} GiB"
                    + (" with gradient checkpointing" if ckpt else ""),
                )
            return method, rows, ckpt  # type: ignore[return-value]
    q = next(r for r in rows if r.method == "qlora")
    why.add("adapter-full", "memory", {"qlora_gib": q.total_gib, "gpu_gib": device})
    missing.append(
        f"more GPU memory: even QLoRA needs about {q.total_gib} GiB on a {device} GiB GPU (use a smaller model, a shorter context_length, or shard over more GPUs)"
    )
    return None, rows, False


def recommend(
    explicit: RouteSignals,
    derived: Derived | None = None,
    *,
    base_model: str | None = None,
    thresholds: Thresholds = THRESHOLDS,
) -> RouteRecommendation:
    """The recommended route for the resolved signals. Raises :class:`RouteInputError` on bad
    signal values (a model size without a unit, a GPU name not in :data:`KNOWN_GPU_GIB` without
    ``gpu_memory_gb``)."""
    derived = derived or Derived()
    t = thresholds
    check_gpu(explicit.gpu, explicit.gpu_memory_gb)
    sig = resolve(explicit, derived)
    v = {k: s.value for k, s in sig.items()}
    why = _Why()
    missing: list[str] = []
    passing, failing = v["passing"], v["failing"]
    attempts = (passing or 0) + (failing or 0) if passing is not None or failing is not None else None
    pass_rate = passing / attempts if attempts else None
    demos = v["demonstrations"] if v["demonstrations"] is not None else passing
    pairs, kto, zv = v["preference_pairs"], v["kto_rows"], v["zero_variance_fraction"]

    feasible: dict[Intervention, str] = {}
    if v["fixed_rule"]:
        feasible["rule"] = "fixed rule"
    if pass_rate is not None and pass_rate >= t.prompt_pass_rate:
        feasible["prompt"] = f"base pass rate {pass_rate:.2f}"
    rl: Intervention = "agentic_grpo" if v["multi_turn_tool_use"] else "grpo"
    rl_blocked: list[str] = []
    if v["verifiable_reward"]:
        if zv is not None and zv > t.max_zero_variance_fraction:
            rl_blocked.append(
                f"every attempt on {zv:.0%} of variant groups got the same reward: no reward variance, GRPO would learn nothing "
                "(make the variants harder or easier so attempts differ, or use SFT)"
            )
            why.add("rl-no-variance", "zero_variance_fraction", zv)
        if pass_rate is not None and pass_rate == 0:
            rl_blocked.append(
                "the base agent never passes: RL has no success to reinforce; SFT on demonstrations first"
            )
            why.add("rl-never-passes", "base_pass_rate", 0.0)
        if not rl_blocked:
            feasible[rl] = "verifiable reward with variance"
    if pairs is not None and pairs >= t.min_dpo_pairs:
        feasible["dpo"] = f"{pairs} pairs"
    if kto is not None and kto >= t.min_kto_rows and (passing is None or (passing > 0 and (failing or 0) > 0)):
        feasible["kto"] = f"{kto} rows"
    if demos is not None and demos >= t.min_sft_demos:
        feasible["sft"] = f"{demos} demonstrations"
    if v["teacher_model"]:
        feasible["distillation"] = f"teacher {v['teacher_model']}"

    order: list[Intervention] = ["rule", "prompt", rl, "dpo", "kto", "sft", "distillation"]
    budget = v["time_budget_hours"]
    if budget is not None and budget < 1 and rl in feasible and any(k in feasible for k in ("dpo", "kto", "sft")):
        order.remove(rl)
        order.append(rl)  # RL needs rollouts; an offline trainer fits a short budget
        why.add(
            "rl-verifiable",
            "time_budget_hours",
            budget,
            f"time budget {budget} h is short for RL rollouts: an offline trainer first",
        )
    chosen: Intervention | None = next((i for i in order if i in feasible), None)
    train_now = True
    if chosen is None:
        chosen, train_now = "sft", False
        have = demos or 0
        why.add("not-enough-data", "demonstrations", have, lead=True)
        missing.append(
            f"need at least {t.min_sft_demos} passing trajectories on train variants (have {have}); "
            "run more attempts (or the task's oracle) and finish them"
        )
        if pairs is not None and 0 < pairs < t.min_dpo_pairs:
            missing.append(f"need at least {t.min_dpo_pairs} pass/fail pairs for DPO (have {pairs})")
    elif chosen == "rule":
        train_now = False
        why.add("fixed-rule", "fixed_rule", True, lead=True)
    elif chosen == "prompt":
        train_now = False
        why.add("base-passes", "base_pass_rate", round(pass_rate or 0, 4), lead=True)
    elif chosen in ("grpo", "agentic_grpo"):
        why.add(
            "rl-verifiable",
            "verifiable_reward",
            True,
            f"verifiable reward, base pass rate {pass_rate:.2f}, zero-variance share {zv}"
            if pass_rate is not None
            else None,
            lead=True,
        )
        if chosen == "agentic_grpo":
            why.add("rl-multi-turn", "multi_turn_tool_use", True, lead=True)
    elif chosen == "dpo":
        why.add("dpo-pairs", "preference_pairs", pairs, lead=True)
    elif chosen == "kto":
        why.add("kto-rows", "kto_rows", kto, lead=True)
    elif chosen == "sft":
        why.add("sft-demos", "demonstrations", demos, lead=True)
    else:
        why.add("distill-teacher", "teacher_model", v["teacher_model"], lead=True)

    if attempts is not None and attempts < t.min_attempts and chosen in ("prompt", "grpo", "agentic_grpo"):
        why.add("few-attempts", "attempts", attempts)
        missing.append(
            f"need at least {t.min_attempts} finished attempts on train variants to measure the base pass rate and "
            f"reward variance (have {attempts})"
        )
    heldout = v["heldout_attempts"]
    if heldout is not None and heldout < t.min_heldout_attempts and chosen not in ("rule", "prompt"):
        why.add("gate-heldout", "heldout_attempts", heldout)
        missing.append(
            f"need at least {t.min_heldout_attempts} finished attempts on held-out variants for the eval gate (have {heldout})"
        )

    trainer = TRAINER_FOR.get(chosen)
    adapter: AdapterKind | None = None
    memory: list[MemoryRow] = []
    hp: dict[str, Any] = {}
    if trainer is not None:
        rows = {"sft": demos, "dpo": pairs, "kto": kto}.get(trainer) or 0
        hp = hyperparameters(trainer, rows)
        adapter, memory, ckpt = _adapter(sig, why, missing, t, hp["lora_r"])
        if ckpt:
            hp["gradient_checkpointing"] = True
        if adapter == "qlora":
            hp["load_in_4bit"] = True
    if missing:
        train_now = False
    alternatives = [
        Alternative(intervention=i, rank=n, why=feasible[i])
        for n, i in enumerate((i for i in order if i in feasible and i != chosen), start=1)
    ]
    if rl_blocked and chosen != rl:
        alternatives.append(
            Alternative(intervention=rl, rank=len(alternatives) + 1, why="blocked: " + "; ".join(rl_blocked))
        )
    job_spec = None
    if trainer is not None and adapter is not None and base_model and derived.behaviour:
        adapter_keys = {
            "lora_r": "rank",
            "lora_alpha": "alpha",
            "target_modules": "target_modules",
            "learning_rate": "learning_rate",
        }
        job_spec = JobSpec(
            route=chosen,
            trainer=trainer,
            base_model=base_model,
            dataset=StoreSelection(export=EXPORT_FORMAT_FOR[trainer], behaviour=derived.behaviour),
            adapter=AdapterConfig(kind=adapter, **{new: hp[old] for old, new in adapter_keys.items()}),
            gate=GateRef(name="deploy", behaviour=derived.behaviour),
            hyperparameters={k: x for k, x in hp.items() if k not in adapter_keys},
            reason=f"route_recommend: {why.reasons[0].text}" if why.reasons else "route_recommend",
        ).model_dump(mode="json")
    return RouteRecommendation(
        intervention=chosen,
        train_now=train_now,
        trainer=trainer,
        adapter=adapter,
        hyperparameters=hp,
        prerequisites_missing=missing,
        alternatives=alternatives,
        reasons=why.reasons,
        signals=sig,
        memory=memory,
        job_spec=job_spec,
    )

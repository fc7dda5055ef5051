"""What a run records while it trains, and the caps that stop it (transformers ``TrainerCallback``s).

- :class:`MetricsWriter`: one JSON line per logged step in ``metrics.jsonl``: ``step``, ``time_s``
  (since training started), ``loss``, ``reward`` (GRPO's mean reward; ``null`` elsewhere),
  ``learning_rate``, ``tokens`` (input tokens seen so far), ``epoch``, and every other numeric value
  the trainer logged under its own name (``frac_reward_zero_std``, ``rewards/...``, ``grad_norm``).
  Each line is flushed when written, so a crash keeps every step logged before it.
- :class:`Caps`: stops training (the adapter is still saved) at ``max_steps`` optimizer steps or
  after ``train_seconds`` of wall time, and records which cap stopped it.
- :class:`ZeroStdGuard` (GRPO): when ``frac_reward_zero_std`` is 1.0 (every group of generations
  got the same reward, so the policy gradient is zero) for ``patience`` logged steps in a row, it
  stops training and marks the run refused: more steps would only spend compute.
- :func:`plot_metrics`: ``metrics.png``, loss and reward against step (matplotlib, Agg backend).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


def _num(v: Any) -> float | None:
    """``v`` as a finite float (numbers, or numeric strings), else ``None``."""
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


class MetricsWriter(TrainerCallback):
    """Appends one line per ``on_log`` to ``path`` (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = path
        self.start = time.monotonic()
        self.last: dict[str, Any] = {}
        self.tokens = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.start = time.monotonic()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        logs = logs or {}
        if not getattr(state, "is_world_process_zero", True):  # one writer under accelerate's many processes
            return
        if "train_loss" in logs:  # the end-of-training summary, not a step
            return
        seen = getattr(state, "num_input_tokens_seen", 0) or 0
        tokens = _num(logs.get("num_tokens")) or float(seen)
        self.tokens = int(max(self.tokens, tokens))
        reward = logs.get("reward", logs.get("rewards/mean"))
        row: dict[str, Any] = {
            "step": int(state.global_step),
            "time_s": round(time.monotonic() - self.start, 3),
            "loss": _num(logs.get("loss")),
            "reward": _num(reward),
            "learning_rate": _num(logs.get("learning_rate")),
            "tokens": self.tokens,
            "epoch": _num(logs.get("epoch")),
        }
        for k, v in logs.items():
            if k not in row and k != "num_tokens" and _num(v) is not None:
                row[k] = _num(v)
        self.last = row
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()


class Caps(TrainerCallback):
    """Stops at ``max_steps`` or after ``train_seconds`` (see the module docstring)."""

    def __init__(self, max_steps: int, train_seconds: float):
        self.max_steps, self.train_seconds = max_steps, train_seconds
        self.start = time.monotonic()
        self.stopped_by: str | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.start = time.monotonic()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
        if state.global_step >= self.max_steps:
            self.stopped_by = f"caps.max_steps ({self.max_steps})"
        elif time.monotonic() - self.start >= self.train_seconds:
            self.stopped_by = f"caps.timeout_s (trained {self.train_seconds:.0f} s, the rest kept to save)"
        if self.stopped_by:
            control.should_training_stop = True
        return control


class ZeroStdGuard(TrainerCallback):
    """Stops and marks the run refused after ``patience`` logged steps of zero reward variance."""

    def __init__(self, patience: int):
        self.patience = patience
        self.run = 0
        self.refused: str | None = None

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> Any:
        frac = _num((logs or {}).get("frac_reward_zero_std"))
        if frac is None or self.patience <= 0:
            return control
        self.run = self.run + 1 if frac >= 1.0 else 0
        if self.run >= self.patience:
            self.refused = (
                f"every group had zero reward variance for {self.run} logged steps (frac_reward_zero_std = 1.0 "
                f"through step {state.global_step}): the policy gradient is zero. Next step: warm up with SFT so "
                "the model sometimes earns the reward, use a reward the model can reach, or raise num_generations"
            )
            control.should_training_stop = True
        return control


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The lines of ``metrics.jsonl`` (unparseable lines skipped; empty when absent)."""
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def plot_metrics(metrics: Path, out: Path, title: str = "") -> Path | None:
    """Write ``out`` (PNG): loss and reward per step from ``metrics``; ``None`` when nothing was
    logged. A panel with no values says so instead of drawing an empty axis."""
    rows = read_metrics(metrics)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, key in zip(axes, ("loss", "reward"), strict=True):
        pts = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), int | float)]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=2)
        else:
            ax.text(0.5, 0.5, f"no {key} logged", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("step")
        ax.set_ylabel(key)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out

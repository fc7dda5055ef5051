"""Build realistic trajectories in a store for export tests (sandbox-style, with server provenance)."""

from __future__ import annotations

import itertools
from typing import Any

from agent_rl_sandbox.tools.store import Store

INSTRUCTION = "Fix the discount rounding bug in shopcart/pricing.py. Claim the file before editing it."
_ids = itertools.count(1)


def call(
    tool: str,
    args: dict[str, Any],
    result: str | None,
    *,
    outcome: str = "ok",
    provenance: str = "server",
    message: str = "",
    **extra_fields: Any,
) -> dict[str, Any]:
    """A step with one tool call and (unless ``result`` is None) its result."""
    cid = f"call_{next(_ids):04d}"
    step: dict[str, Any] = {
        "source": "agent",
        "message": message,
        "provenance": provenance,
        "outcome": outcome,
        "tool_calls": [{"tool_call_id": cid, "function_name": tool, "arguments": args}],
        **extra_fields,
    }
    if result is not None:
        step["observation"] = {"results": [{"source_call_id": cid, "content": result}]}
    return step


def sandbox_trajectory(
    store: Store,
    *,
    task_id: str = "claim-before-edit",
    split: str | None = "train",
    passed: bool | None = True,
    reward: float | None = None,
    agent: str = "good-agent",
    cancel: bool = False,
    cancel_first: bool = False,
    self_logged: bool = True,
    finish: bool = True,
    content: str = "def discounted(price, pct):\n    return round(price * (1 - pct / 100), 2)\n",
) -> str:
    """A trajectory shaped like a sandbox episode (reset, read, claim, write, test, finish)."""
    t = store.trajectories.start(
        agent={"name": agent}, task_id=task_id, behaviour="claim-before-edit", split=split, sandbox_id="sbx_test"
    )
    steps: list[dict[str, Any]] = [
        {
            "source": "system",
            "message": INSTRUCTION,
            "provenance": "server",
            "extra": {"event": "reset", "task_id": task_id},
        },
    ]
    if cancel_first:
        steps.append(call("sandbox_exec", {"command": "python -m pytest -q"}, None, outcome="unknown"))
    steps += [
        call(
            "sandbox_read_file",
            {"path": "shopcart/pricing.py", "offset": 0, "max_bytes": 16000},
            "def discounted(price, pct):\n    return int(price * (1 - pct / 100))\n",
        ),
        call(
            "sandbox_claim",
            {"paths": ["shopcart/pricing.py"], "reason": "fix rounding"},
            "claimed: shopcart/pricing.py",
        ),
    ]
    if self_logged:
        steps.append({"source": "agent", "message": "I claimed the file (self-reported note).", "provenance": "agent"})
    steps.append(call("sandbox_write_file", {"path": "shopcart/pricing.py", "content": content}, "wrote 72 bytes"))
    if cancel:
        steps.append(
            call(
                "sandbox_exec",
                {"command": "python -m pytest -q"},
                None,
                outcome="unknown",
                message="Running the tests now.",
            )
        )
    steps += [
        call(
            "sandbox_exec",
            {"command": "python -m pytest -q"},
            "exit 0\n--- stdout ---\n4 passed in 0.05s\n--- stderr ---\n"
            if passed
            else "exit 1\n--- stdout ---\n1 failed\n",
            exit_code=0 if passed else 1,
        ),
        call(
            "sandbox_finish",
            {"message": "Fixed rounding; `python -m pytest -q`: 4 passed."},
            "episode finished; verifier running",
            message="Fixed rounding; `python -m pytest -q`: 4 passed.",
            done=True,
        ),
    ]
    store.trajectories.log_steps(t.session_id, steps)
    if finish:
        r = reward if reward is not None else (1.0 if passed else 0.2 if passed is False else None)
        store.trajectories.finish(
            t.session_id,
            final_message="Fixed rounding.",
            reward=r,
            passed=passed,
            self_report_only=False if passed is not None else None,
        )
    return t.session_id

"""The policy agent: a model plays one sandbox episode, turn by turn, within a budget.

Each turn the model gets the conversation so far (the instruction as the user message, then every
tool call it made and the recorded observation, in the form the training exports use) and the
offered tools' declarations, and answers one :class:`AssistantTurn`. Each tool call runs through
:class:`SandboxSession` (the MCP tools' domain methods; malformed and unknown calls and bad
arguments become error observations, recorded). The episode ends when the model calls
``sandbox_finish``, answers without a tool call (its text becomes the final message), or the turn
or token budget runs out (finished with a message saying so); it is always finished and scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_rl_sandbox.agents.policy._model import ModelError, PolicyModel
from agent_rl_sandbox.agents.policy._session import DEFAULT_TOOLS, SandboxSession
from agent_rl_sandbox.tools._caller import OPERATOR, Caller


@dataclass(frozen=True)
class Budget:
    """Limits of one episode: model turns, completion tokens in all, tokens per turn."""

    max_turns: int = 8
    max_tokens: int = 2048
    max_new_tokens: int = 256


@dataclass(frozen=True)
class EpisodeResult:
    """A finished episode: the trajectory, its score, and how it ended."""

    task_id: str
    session_id: str
    sandbox_id: str
    reward: float
    passed: bool
    turns: int
    completion_tokens: int
    tool_calls: int
    tool_errors: int
    ended_by: str
    """``finish`` (the model called sandbox_finish), ``text`` (answered without a tool call),
    ``turns`` / ``tokens`` (budget), ``model_error`` (the backend failed; the message is recorded)."""
    failed_criteria: tuple[str, ...] = ()


def _assistant_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def play_episode(
    services: Any,
    model: PolicyModel,
    task_id: str,
    *,
    agent_name: str = "policy",
    tools: tuple[str, ...] = DEFAULT_TOOLS,
    budget: Budget = Budget(),
    caller: Caller = OPERATOR,
    session: SandboxSession | None = None,
    declarations: list[dict[str, Any]] | None = None,
) -> EpisodeResult:
    """Play ``task_id`` with ``model``; returns the scored result.

    ``tools`` are the episode tools offered; ``declarations`` overrides what the model is shown for
    them (e.g. the declarations of the rows it was trained on). ``session`` reuses a sandbox
    across episodes. Raises ``ActionError`` for an unknown task; a failing model backend ends the
    episode (``ended_by="model_error"``), it does not raise."""
    s = session or SandboxSession(services, tools=tools, caller=caller)
    instruction = s.open(task_id, agent_name=agent_name)
    decls = declarations if declarations is not None else s.declarations
    messages: list[dict[str, Any]] = [{"role": "user", "content": instruction}]
    tokens = turns = 0
    ended_by = "turns"
    last_text = ""
    while turns < budget.max_turns:
        left = budget.max_tokens - tokens
        if left <= 0:
            ended_by = "tokens"
            break
        try:
            turn = model.respond(messages, decls, max_new_tokens=min(budget.max_new_tokens, left))
        except ModelError as e:
            last_text, ended_by = f"(model backend failed: {e})", "model_error"
            break
        turns += 1
        tokens += turn.completion_tokens
        last_text = turn.text or last_text
        for reason in turn.malformed:
            obs = s.malformed(reason, turn.text)
            messages.append(_assistant_call("invalid_tool_call", {}, f"call_m{turns}"))
            messages.append(
                {"role": "tool", "tool_call_id": f"call_m{turns}", "name": "invalid_tool_call", "content": obs.content}
            )
        if not turn.tool_calls and not turn.malformed:
            ended_by = "text"
            break
        for i, c in enumerate(turn.tool_calls):
            obs = s.call(c.name, c.arguments, error=c.error)
            cid = f"call_{turns}_{i}"
            messages.append(_assistant_call(c.name, c.arguments if c.arguments is not None else {}, cid))
            messages.append({"role": "tool", "tool_call_id": cid, "name": c.name, "content": obs.content})
            if obs.finished:
                break
        if s.finished:
            ended_by = "finish"
            break
    if not s.finished:
        note = {"turns": "turn budget exhausted", "tokens": "token budget exhausted"}.get(ended_by)
        s.finish(last_text if ended_by in ("text", "model_error") else f"(episode ended: {note}) {last_text}".strip())
    fin = s.finish_result
    assert fin is not None and s.session_id is not None and s.sandbox_id is not None
    return EpisodeResult(
        task_id=task_id,
        session_id=s.session_id,
        sandbox_id=s.sandbox_id,
        reward=fin.reward,
        passed=fin.passed,
        turns=turns,
        completion_tokens=tokens,
        tool_calls=s.calls,
        tool_errors=s.errors,
        ended_by=ended_by,
        failed_criteria=tuple(fin.failed_criteria),
    )

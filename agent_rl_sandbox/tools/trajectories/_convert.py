"""Turn a stored trajectory into a chat conversation (messages plus tool declarations). Pure functions.

Rules (each one is counted by the exporters when it changes a row):

- **Which steps.** When a trajectory has steps the server or a hook recorded, self-logged (``agent``)
  steps are left out: they repeat what was already seen, untrusted. A trajectory with only self-logged
  steps (an import, a ``trajectory_log_step`` session) uses them all.
- **System steps.** The sandbox's ``reset`` step (the task instruction) becomes the user turn. A system
  step without an ``extra.event`` before the first user or assistant turn is the system prompt
  (consecutive ones are joined). Every other system step is bookkeeping (hook session start, compaction,
  mid-conversation notes) and is left out: chat templates accept a system message only at the start.
- **Assistant turns.** A step with tool calls becomes one assistant message with ``tool_calls`` followed by
  one ``tool`` message per call, in call order. The content of a ``server`` step is empty: the server never
  sees the agent's free text (the step's ``message`` only repeats a tool argument).
- **No fabricated results.** At the first tool call that has no result (a cancelled run, a pre-tool hook
  without its post event), the conversation is cut: the step's text is kept if it has any, the call and
  everything after it are dropped (``truncated``). Results without ``source_call_id`` (ATIF allows them;
  Harbor's terminus-2 writes one terminal screen per step) answer the step's unpaired calls in order when
  there are as many of them as calls; otherwise the step is cut the same way.
- **Empty results.** A tool result with no text (a command that printed nothing) is written as
  :data:`EMPTY_RESULT` (``empty_results``): an empty tool message reads as a lost result to validators and
  some templates, and the model did see that the call returned nothing.
- **Turns alternate.** Two user turns in a row (a slash command's expansion and the next prompt), or an
  assistant text turn followed by another assistant turn (an import that split one reply over steps), are
  joined into one turn with a blank line between (``merged_turns``): chat templates and trainers expect
  user and assistant turns to alternate.
- **Ending.** A training conversation ends with an assistant turn: trailing user/system/tool messages
  are dropped (a final assistant call may then have no tool message after it, which is how the episode
  ended, e.g. ``sandbox_finish``). With no assistant turn left there is no row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent_rl_sandbox.schemas.trajectory import Step, Trajectory
from agent_rl_sandbox.tools.store import unanswered_calls

EMPTY_RESULT = "(no output)"
"""The text of a tool message whose result was empty."""
BOUND_ARGUMENTS = ("sandbox_id",)
"""Arguments of the sandbox tools that the environment binds (a training environment owns the sandbox),
so they are not part of exported tool declarations; the server records calls without them."""


@dataclass
class Conversation:
    """A trajectory as chat messages (OpenAI/TRL shape, tool-call ``arguments`` as dicts here)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    """Tool declarations (``{"type": "function", "function": {name, description, parameters}}``)."""
    prompt_end: int
    """Messages before this index are the prompt (system and user turns before the first assistant turn)."""
    prompt_messages: list[dict[str, Any]] = field(default_factory=list)
    """System and user turns before the first assistant turn, even when there is no assistant turn
    (what a prompt-only row needs)."""
    truncated: bool = False
    skipped_system: int = 0
    skipped_self_logged: int = 0
    merged_turns: int = 0
    empty_results: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def has_assistant(self) -> bool:
        return any(m["role"] == "assistant" for m in self.messages)

    @property
    def prompt(self) -> list[dict[str, Any]]:
        return self.messages[: self.prompt_end]

    @property
    def completion(self) -> list[dict[str, Any]]:
        return self.messages[self.prompt_end :]


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _bare_name(name: str) -> str:
    """``mcp__agent-rl-sandbox__sandbox_exec`` -> ``sandbox_exec`` (how Claude Code names MCP tools)."""
    if name.startswith("mcp__"):
        parts = name.split("__", 2)
        if len(parts) == 3:
            return parts[2]
    return name


def _project_tool_schema(name: str) -> dict[str, Any] | None:
    """Parameters of one of this project's MCP tools (from its input model), ``None`` if not ours."""
    from agent_rl_sandbox.schemas import tools as io

    cls = getattr(io, "".join(p.capitalize() for p in _bare_name(name).split("_")) + "Input", None)
    if cls is None or not hasattr(cls, "model_json_schema"):
        return None
    schema = cls.model_json_schema()
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in BOUND_ARGUMENTS}
    for v in props.values():
        v.pop("title", None)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    return out


def tool_declarations(traj: Trajectory, called: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Declarations for a row: the agent's own ``tool_definitions`` when it recorded them, plus one for
    every called tool they lack (a sandbox episode tool whose every call passed exactly its parameters
    gets :func:`~agent_rl_sandbox.tools.sandbox._episode_tools.tool_declaration`, the declaration the
    policy agent and the training environment show a model; other tools of this project come from
    their input models, others are inferred from the arguments seen). Declarations never mark a parameter required unless the agent's own did, and an
    inferred one admits every argument actually passed."""
    from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS
    from agent_rl_sandbox.tools.sandbox._episode_tools import tool_declaration as episode_tool_declaration

    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for d in traj.agent.tool_definitions or []:
        fn = d.get("function", d) if isinstance(d, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str) and name not in seen:
            out.append(d if "function" in d else {"type": "function", "function": d})
            seen.add(name)
    for name, arg_list in called.items():
        if name in seen:
            continue
        seen.add(name)
        episode = EPISODE_TOOLS.get(_bare_name(name))
        if (
            episode is not None
            and name == episode.name
            and all(set(a) == {p.name for p in episode.params} for a in arg_list)
        ):
            # every call passed exactly the episode tool's parameters: the declaration a policy model plays with
            out.append(episode_tool_declaration(name))
            continue
        params = _project_tool_schema(name) or {"type": "object", "properties": {}}
        props = params.setdefault("properties", {})
        for args in arg_list:
            for k, v in args.items():
                t = _json_type(v)
                cur = props.get(k)
                if cur is None:
                    props[k] = {"type": t}
                elif "type" in cur and cur["type"] != t and not (isinstance(cur["type"], list) and t in cur["type"]):
                    if "anyOf" in cur or "$ref" in cur:
                        continue
                    types = cur["type"] if isinstance(cur["type"], list) else [cur["type"]]
                    if not (t == "integer" and "number" in types):
                        cur["type"] = sorted({*types, t})
        out.append({"type": "function", "function": {"name": name, "description": "", "parameters": params}})
    return out


def conversation(traj: Trajectory) -> Conversation:
    """The trajectory as a conversation (see the module rules). Never raises on a stored trajectory."""
    trusted = any(s.provenance in ("server", "hook") for s in traj.steps)
    msgs: list[dict[str, Any]] = []
    called: dict[str, list[dict[str, Any]]] = {}
    conv = Conversation(messages=msgs, tools=[], prompt_end=0)
    for step in traj.steps:
        if trusted and step.provenance == "agent":
            conv.skipped_self_logged += 1
            continue
        if step.source == "system":
            event = step.extra.get("event")
            if event == "reset":
                if step.message.strip():
                    msgs.append({"role": "user", "content": step.message})
            elif event is None and step.message.strip() and all(m["role"] == "system" for m in msgs):
                if msgs:
                    msgs[-1]["content"] += "\n\n" + step.message
                else:
                    msgs.append({"role": "system", "content": step.message})
            else:
                conv.skipped_system += 1
            continue
        if step.source == "user":
            if step.message.strip():
                msgs.append({"role": "user", "content": step.message})
                _merge_last(msgs, conv)
            continue
        n = len(msgs)
        ok = _assistant(step, msgs, called, conv)
        if len(msgs) > n:
            _merge_at(msgs, n, conv)
        if not ok:
            break
    first = next((i for i, m in enumerate(msgs) if m["role"] == "assistant"), len(msgs))
    conv.prompt_messages = [dict(m) for m in msgs[:first]]
    while msgs and msgs[-1]["role"] != "assistant":
        msgs.pop()
    conv.prompt_end = next((i for i, m in enumerate(msgs) if m["role"] == "assistant"), len(msgs))
    conv.tools = tool_declarations(traj, called) if called else []
    return conv


def _merge_last(msgs: list[dict[str, Any]], conv: Conversation) -> None:
    """Join the last message into the one before when both are user turns (see "Turns alternate")."""
    _merge_at(msgs, len(msgs) - 1, conv)


def _merge_at(msgs: list[dict[str, Any]], i: int, conv: Conversation) -> None:
    """Join ``msgs[i]`` into ``msgs[i - 1]`` when they are two user turns, or an assistant text turn followed
    by an assistant turn (whose tool calls, if any, the joined turn keeps)."""
    if i <= 0 or i >= len(msgs):
        return
    prev, cur = msgs[i - 1], msgs[i]
    if prev["role"] != cur["role"] or prev["role"] not in ("user", "assistant") or prev.get("tool_calls"):
        return
    text = "\n\n".join(x for x in (prev.get("content") or "", cur.get("content") or "") if x)
    msgs[i - 1] = {**cur, "content": text}
    del msgs[i]
    conv.merged_turns += 1


def _assistant(step: Step, msgs: list, called: dict, conv: Conversation) -> bool:
    """Append the step's assistant turn and tool results; ``False`` when the conversation must stop here."""
    content = "" if step.provenance == "server" else step.message
    results = _paired_results(step)
    if results is None:
        conv.truncated = True
        if content.strip():
            msgs.append({"role": "assistant", "content": content})
        return False
    if not step.tool_calls:
        if content.strip():
            msgs.append({"role": "assistant", "content": content})
        return True
    calls = []
    for c in step.tool_calls:
        calls.append(
            {"id": c.tool_call_id, "type": "function", "function": {"name": c.function_name, "arguments": c.arguments}}
        )
        called.setdefault(c.function_name, []).append(c.arguments)
    msgs.append({"role": "assistant", "content": content, "tool_calls": calls})
    for c in step.tool_calls:
        text = results[c.tool_call_id]
        if not text.strip():
            conv.empty_results += 1
        msgs.append(
            {
                "role": "tool",
                "tool_call_id": c.tool_call_id,
                "name": c.function_name,
                "content": text if text.strip() else EMPTY_RESULT,
            }
        )
    return True


def _paired_results(step: Step) -> dict[str, str] | None:
    """Each tool call's result text, or ``None`` when a call has none (see "No fabricated results")."""
    obs = step.observation.results if step.observation else []
    out = {r.source_call_id: r.content or "" for r in obs if r.source_call_id is not None}
    loose = [r.content or "" for r in obs if r.source_call_id is None]
    unpaired = [c.tool_call_id for c in step.tool_calls or [] if c.tool_call_id not in out]
    if not unpaired:
        return out
    if unanswered_calls(step) and len(loose) == len(unpaired):
        out.update(zip(unpaired, loose, strict=True))
        return out
    return None


def encode_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``messages`` with every tool call's ``arguments`` as a JSON string.

    Exported files keep arguments as JSON strings because Arrow (``datasets``) infers one struct type
    per column: dict arguments from different tools are merged into one struct holding every key any
    call used, and each call then reads back with the other tools' keys set to ``null``, which a chat
    template renders into the training text. A string reads back exactly as written; TRL passes it to
    the chat template, and templates that render tool calls (Qwen2.5/3, Hermes, Llama 3.1 via
    ``tojson`` on parsed input) accept a string there (see ``docs`` of the trainers for the template).
    """
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = {
                **m,
                "tool_calls": [
                    {
                        **c,
                        "function": {
                            **c["function"],
                            "arguments": json.dumps(c["function"]["arguments"], ensure_ascii=False),
                        },
                    }
                    for c in m["tool_calls"]
                ],
            }
        out.append(m)
    return out


def minimind_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MiniMind's conversation shape: tools as a JSON string on the first (system) message, an assistant's
    ``tool_calls`` as a JSON string of ``[{"name", "arguments"}]``, tool messages with ``content`` only, and
    a ``content`` key on every message (MiniMind README and ``dataset/lm_dataset.py``)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in m["tool_calls"]]
            out.append(
                {
                    "role": "assistant",
                    "content": m.get("content") or "",
                    "tool_calls": json.dumps(calls, ensure_ascii=False),
                }
            )
        elif m["role"] == "tool":
            out.append({"role": "tool", "content": m.get("content") or ""})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    if tools:
        encoded = json.dumps(tools, ensure_ascii=False)
        if out and out[0]["role"] == "system":
            out[0]["tools"] = encoded
        else:
            out.insert(0, {"role": "system", "content": "", "tools": encoded})
    return out


def tool_call_text(name: str, arguments: Any) -> str:
    """A tool call as Qwen-style chat templates (MiniMind's included) render it in the assistant turn."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def text_only_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with tool calls and results written out as the text a Qwen-style template renders:
    ``<tool_call>`` blocks in the assistant turn, results as a user turn of ``<tool_response>`` blocks.
    For loaders that pass no tools to the template (MiniMind's DPO dataset): the token sequence is the
    one the model sees with structured tool calls."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            blocks = [tool_call_text(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]
            text = m.get("content") or ""
            out.append({"role": "assistant", "content": "\n".join(([text] if text else []) + blocks)})
        elif m["role"] == "tool":
            block = "<tool_response>\n" + (m.get("content") or "") + "\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1].get("_tool"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool": True})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    for m in out:
        m.pop("_tool", None)
    return out


def first_divergence(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int | None:
    """Index of the first message where two conversations differ, when both have an assistant turn
    there (the decision point a step-level preference pair is made of); ``None`` otherwise."""
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    if k >= len(a) or k >= len(b) or a[k]["role"] != "assistant" or b[k]["role"] != "assistant":
        return None
    return k

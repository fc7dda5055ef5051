"""An OpenAI-compatible chat endpoint as a :class:`PolicyModel` (a vLLM server: the adapter to use
is the request's ``model``, the base model's served name is the kill switch's fallback).

Plain HTTP with :mod:`urllib.request` (no client library, no torch). ``POST /v1/chat/completions``
with the messages, the tool declarations and ``max_tokens``; greedy by default
(``temperature=0``). Tool calls come back structured when the server runs a tool parser (vLLM's
``--enable-auto-tool-choice --tool-call-parser hermes``); without one, ``<tool_call>`` blocks in the
text are parsed here with the project's parser, so both deployments give the same turn.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from agent_rl_sandbox.agents.policy._model import AssistantTurn, ModelError, ToolCall
from agent_rl_sandbox.tools.evals import parse_tool_calls
from agent_rl_sandbox.tools.evals._toolcalls import ParsedToolCall


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-template messages in the OpenAI wire form: tool-call arguments as JSON strings, ids on
    calls and on the tool messages that answer them (in order)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for j, c in enumerate(m["tool_calls"]):
                fn = c.get("function", {})
                args = fn.get("arguments", {})
                cid = c.get("id") or f"call_{i}_{j}"
                pending.append(cid)
                calls.append(
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": fn.get("name", ""),
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
            out.append({"role": "assistant", "content": m.get("content") or "", "tool_calls": calls})
        elif m.get("role") == "tool":
            cid = m.get("tool_call_id") or (pending.pop(0) if pending else f"call_{i}")
            out.append({"role": "tool", "tool_call_id": cid, "content": m.get("content") or ""})
        else:
            out.append({"role": m.get("role", "user"), "content": m.get("content") or ""})
    return out


def _wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The declarations exactly as the model was trained on them, ``return`` key included.

    ``return`` is not in the OpenAI tool schema, but the training rows and TRL's agentic prompts carry it
    (transformers' ``get_json_schema`` writes it from a docstring's ``Returns:``) and the chat template
    renders it; dropping it on the wire changes the prompt the adapter sees. Measured with the demo's
    adapter on setup-triage/heldout-1: reward 1.0 with the key, 0.40 without. vLLM's request models allow
    extra fields, so the key reaches its chat template as well."""
    return [{"type": "function", "function": dict(t["function"])} for t in tools]


def _structured_call(c: Any) -> ToolCall:
    fn = c.get("function") if isinstance(c, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return ToolCall(name="", arguments=None, error="tool call without a function name", raw=str(c)[:500])
    raw = fn.get("arguments")
    if isinstance(raw, dict):
        return ToolCall(fn["name"], raw, raw=json.dumps(raw)[:500])
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except (ValueError, RecursionError):
        return ToolCall(fn["name"], None, "arguments are not valid JSON", raw=str(raw)[:500])
    if not isinstance(args, dict):
        return ToolCall(
            fn["name"], None, f"arguments are a JSON {type(args).__name__}, expected an object", str(raw)[:500]
        )
    return ToolCall(fn["name"], args, raw=str(raw)[:500])


def turn_from_text(text: str, completion_tokens: int = 0) -> AssistantTurn:
    """An assistant turn from raw model text holding ``<tool_call>{json}</tool_call>`` blocks (the
    Qwen/Hermes convention): well-formed blocks become calls, the rest are reported as
    ``malformed`` (and stay in the text)."""
    calls, errors = parse_tool_calls(text)
    free = text.split("<tool_call>")[0].strip() if calls else text.strip()
    return AssistantTurn(
        text=free,
        tool_calls=[ToolCall(c.name, dict(c.arguments)) for c in calls if isinstance(c, ParsedToolCall)],
        completion_tokens=completion_tokens,
        malformed=[e.reason for e in errors],
    )


class OpenAIChatModel:
    """``model`` on the OpenAI-compatible server at ``base_url`` (``http://127.0.0.1:8000``).

    ``api_key`` is sent as a bearer token when set; ``timeout_s`` bounds each request;
    ``temperature`` 0 is greedy."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        temperature: float = 0.0,
    ):
        self._url = base_url.rstrip("/")
        self.name = model
        self._api_key = api_key
        self._timeout = timeout_s
        self._temperature = temperature

    def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_new_tokens: int
    ) -> AssistantTurn:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": _wire_messages(messages),
            "max_tokens": max_new_tokens,
            "temperature": self._temperature,
        }
        if tools:
            body["tools"] = _wire_tools(tools)
        req = urllib.request.Request(self._url + "/v1/chat/completions", data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        if self._api_key:
            req.add_header("Authorization", f"Bearer {self._api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            raise ModelError(
                f"{self._url}/v1/chat/completions answered {exc.code} for model {self.name!r}: {detail}. "
                "Next step: check the model name (GET /v1/models) and the server log."
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ModelError(
                f"chat endpoint {self._url} unreachable ({exc}). Next step: start the server or fix the URL."
            ) from None
        try:
            doc = json.loads(raw)
            msg = doc["choices"][0]["message"]
            usage = doc.get("usage") or {}
            tokens = int(usage.get("completion_tokens") or 0)
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelError(
                f"{self._url}/v1/chat/completions did not answer a chat completion: {raw[:300]!r}. "
                "Next step: point at an OpenAI-compatible server."
            ) from None
        content = msg.get("content") or ""
        structured = msg.get("tool_calls") or []
        if structured:
            return AssistantTurn(
                text=content.strip(), tool_calls=[_structured_call(c) for c in structured], completion_tokens=tokens
            )
        return turn_from_text(content, tokens)

"""A local stand-in for vLLM's runtime-LoRA server: the same HTTP surface, served by PEFT on CPU.

``python -m agent_rl_sandbox.trainers.lora_server --base DIR [--host 127.0.0.1] [--port 0]
[--served-model-name NAME]`` loads the causal LM in ``DIR`` (a TRL-recognised chat template, as
:class:`~agent_rl_sandbox.trainers.policy_model.TransformersPolicy` needs), prints one line
``lora_server listening on http://HOST:PORT base=NAME`` to stdout (flushed; ``--port 0`` picks a
free port) and serves until killed:

    GET  /v1/models               {"object": "list", "data": [{"id": BASE}, {"id": NAME, "parent": BASE, "root": PATH}, ...]}
    POST /v1/load_lora_adapter    {"lora_name", "lora_path"}   200 | 400 (missing field, already loaded,
                                                                 no adapter_config.json, PEFT refused it)
    POST /v1/unload_lora_adapter  {"lora_name"}                200 | 404 (not loaded)
    POST /v1/chat/completions     {"model", "messages", "tools"?, "max_tokens"?, "temperature"?}
                                  200 one choice: {"role": "assistant", "content", "tool_calls"?}
                                  (OpenAI form, arguments as JSON strings) | 404 (unknown model) | 400

so :class:`~agent_rl_sandbox.tools.adapters.VllmBackend` (deploy, the unhook dry run, the kill
switch's unload) and :class:`~agent_rl_sandbox.agents.policy.OpenAIChatModel` run against it
unchanged. ``model`` = the base name answers with PEFT's ``disable_adapter()`` (the weights without
any adapter); an adapter name answers after ``set_adapter(name)``. Requests are served one at a time
(one lock around the model). Generation and tool-call parsing are
:meth:`TransformersPolicy.respond`'s (greedy; ``temperature`` > 0 is ignored). Not a production
server: no auth, no batching, no streaming, no ``--max-loras`` eviction.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_rl_sandbox.trainers.policy_model import TransformersPolicy


class LoraServerError(ValueError):
    """A request the server refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _template_messages(messages: Any) -> list[dict[str, Any]]:
    """OpenAI wire messages -> chat-template messages (tool-call arguments as dicts). Raises
    :class:`LoraServerError` (400) on a malformed list."""
    if not isinstance(messages, list) or not messages:
        raise LoraServerError("messages must be a non-empty list")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise LoraServerError(f"messages[{i}] must be an object with a role")
        msg: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = (c or {}).get("function") or {}
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except ValueError:
                        args = {"_raw": args}
                calls.append({"type": "function", "function": {"name": fn.get("name", ""), "arguments": args or {}}})
            msg["tool_calls"] = calls
        out.append(msg)
    return out


class LoraServer:
    """The model state behind the HTTP surface: one base model, PEFT adapters by name.

    ``base_dir`` is the base model folder; ``served_name`` its ``model`` name (default: the folder
    path, as vLLM names a model by what it was started with)."""

    def __init__(self, base_dir: str | Path, served_name: str | None = None):
        self.base_dir = Path(base_dir)
        self.base_name = served_name or str(base_dir)
        self.policy = TransformersPolicy(self.base_dir, name=self.base_name)
        self.adapters: dict[str, str] = {}
        """Loaded adapter name -> its folder, in load order."""
        self._peft_names: dict[str, str] = {}
        """Served name -> PEFT's adapter name (``lora<n>``: PEFT refuses names with a ``.``)."""
        self._count = 0
        self.lock = threading.Lock()

    def models(self) -> dict[str, Any]:
        with self.lock:
            data: list[dict[str, Any]] = [{"id": self.base_name, "object": "model", "parent": None}]
            data += [
                {"id": n, "object": "model", "root": p, "parent": self.base_name} for n, p in self.adapters.items()
            ]
        return {"object": "list", "data": data}

    def load(self, name: Any, path: Any) -> str:
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise LoraServerError("lora_name and lora_path are required strings")
        if not (Path(path) / "adapter_config.json").is_file():
            raise LoraServerError(f"No adapter found for {path} (no adapter_config.json)")
        with self.lock:
            if name in self.adapters or name == self.base_name:
                raise LoraServerError(f"The lora adapter '{name}' has already been loaded.")
            self._count += 1
            internal = f"lora{self._count}"
            try:
                if not self.adapters:
                    from peft import PeftModel

                    self.policy.model = PeftModel.from_pretrained(self.policy.model, path, adapter_name=internal)
                else:
                    self.policy.model.load_adapter(path, adapter_name=internal)
            except Exception as exc:  # noqa: BLE001 - PEFT's refusal becomes the 400's text
                raise LoraServerError(f"loading {path} as {name!r} failed: {type(exc).__name__}: {exc}") from None
            self.policy.model.eval()
            self.adapters[name] = path
            self._peft_names[name] = internal
        return f"Success: LoRA adapter '{name}' added successfully."

    def unload(self, name: Any) -> str:
        with self.lock:
            if name not in self.adapters:
                raise LoraServerError(f"The lora adapter '{name}' cannot be found.", 404)
            del self.adapters[name]
            internal = self._peft_names.pop(name)
            if self.adapters:
                self.policy.model.set_adapter(self._peft_names[next(iter(self.adapters))])
                self.policy.model.delete_adapter(internal)
            else:  # the last one: back to the plain base model (PEFT's unload() strips the LoRA layers)
                self.policy.model = self.policy.model.unload()
        return f"Success: LoRA adapter '{name}' removed successfully."

    def chat(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise LoraServerError("the body must be a JSON object")
        model = body.get("model")
        messages = _template_messages(body.get("messages"))
        tools = body.get("tools") or []
        if not isinstance(tools, list):
            raise LoraServerError("tools must be a list")
        max_tokens = body.get("max_tokens") or 256
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise LoraServerError("max_tokens must be a positive integer")
        with self.lock:
            if model == self.base_name:
                if self.adapters:
                    with self.policy.model.disable_adapter():
                        turn = self.policy.respond(messages, tools, max_new_tokens=max_tokens)
                else:
                    turn = self.policy.respond(messages, tools, max_new_tokens=max_tokens)
            elif model in self.adapters:
                self.policy.model.set_adapter(self._peft_names[model])
                turn = self.policy.respond(messages, tools, max_new_tokens=max_tokens)
            else:
                raise LoraServerError(f"The model `{model}` does not exist.", 404)
        msg: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": json.dumps(c.arguments) if c.arguments is not None else (c.raw or ""),
                    },
                }
                for i, c in enumerate(turn.tool_calls)
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if turn.tool_calls else "stop"}],
            "usage": {"completion_tokens": turn.completion_tokens},
        }


def build_app(server: LoraServer) -> Any:
    """The Starlette app serving ``server`` (see the module docstring for the routes)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    async def _body(request: Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            raise LoraServerError("the body is not JSON") from None

    def _error(exc: LoraServerError) -> JSONResponse:
        return JSONResponse({"error": {"message": str(exc), "code": exc.status}}, status_code=exc.status)

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(server.models())

    async def load(request: Request) -> Any:
        try:
            b = await _body(request)
            b = b if isinstance(b, dict) else {}
            return PlainTextResponse(await run_in_threadpool(server.load, b.get("lora_name"), b.get("lora_path")))
        except LoraServerError as exc:
            return _error(exc)

    async def unload(request: Request) -> Any:
        try:
            b = await _body(request)
            b = b if isinstance(b, dict) else {}
            return PlainTextResponse(await run_in_threadpool(server.unload, b.get("lora_name")))
        except LoraServerError as exc:
            return _error(exc)

    async def chat(request: Request) -> Any:
        try:
            return JSONResponse(await run_in_threadpool(server.chat, await _body(request)))
        except LoraServerError as exc:
            return _error(exc)

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/load_lora_adapter", load, methods=["POST"]),
            Route("/v1/unload_lora_adapter", unload, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


@contextlib.contextmanager
def lora_server_process(
    base_dir: str | Path, *, served_name: str | None = None, start_timeout_s: float = 120.0
) -> Iterator[tuple[str, str]]:
    """Run ``python -m agent_rl_sandbox.trainers.lora_server --base base_dir --port 0`` as a child
    process on loopback; yields ``(url, base_name)`` once it listens, and stops it on exit (always,
    also on error: terminate, then kill after 10 s). Raises ``RuntimeError`` with its output when it
    does not start within ``start_timeout_s``."""
    cmd = [sys.executable, "-m", "agent_rl_sandbox.trainers.lora_server", "--base", str(base_dir), "--port", "0"]
    if served_name:
        cmd += ["--served-model-name", served_name]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines: list[str] = []
        found: dict[str, str] = {}

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line.rstrip())
                if line.startswith("lora_server listening on ") and not found:
                    url, _, base = line[len("lora_server listening on ") :].strip().partition(" base=")
                    found.update(url=url, base=base)
                    ready.set()
            ready.set()

        ready = threading.Event()
        threading.Thread(target=read, daemon=True).start()
        ready.wait(start_timeout_s)
        if not found:
            raise RuntimeError(
                f"lora_server did not start within {start_timeout_s:.0f} s (exit code {proc.poll()}): "
                + " | ".join(lines[-20:])
            )
        yield found["url"], found["base"]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m agent_rl_sandbox.trainers.lora_server", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--base", required=True, help="base model folder")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--served-model-name", default=None, help="the base model's name (default: --base as given)")
    args = ap.parse_args(argv)
    import uvicorn

    server = LoraServer(args.base, args.served_model_name)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    print(f"lora_server listening on http://{args.host}:{port} base={server.base_name}", flush=True)
    config = uvicorn.Config(build_app(server), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])

"""A small real HTTP server on loopback that speaks vLLM's runtime-LoRA endpoints.

``POST /v1/load_lora_adapter {lora_name, lora_path}``: 200, or 400 when the name is already loaded
or the folder has no ``adapter_config.json`` (what vLLM checks first). ``POST
/v1/unload_lora_adapter {lora_name}``: 200, or 404 when not loaded. ``GET /v1/models``: the base
model and each loaded adapter (``parent`` = base). With ``max_loras`` set, loading past it evicts
the oldest adapter, as vLLM's ``--max-cpu-loras`` does. ``requests`` records every call.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FakeVllm(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, base_model: str = "base-model", max_loras: int | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base_model = base_model
        self.max_loras = max_loras
        self.loras: dict[str, str] = {}
        self.requests: list[tuple[str, str, dict]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeVllm

    def log_message(self, *args):  # quiet
        pass

    def _send(self, code: int, body: object) -> None:
        raw = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        srv = self.server
        srv.requests.append(("GET", self.path, {}))
        if self.path != "/v1/models":
            return self._send(404, {"detail": "Not Found"})
        with srv.lock:
            data = [{"id": srv.base_model, "object": "model", "parent": None}]
            data += [{"id": n, "object": "model", "root": p, "parent": srv.base_model} for n, p in srv.loras.items()]
        self._send(200, {"object": "list", "data": data})

    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        srv.requests.append(("POST", self.path, body))
        name = body.get("lora_name")
        with srv.lock:
            if self.path == "/v1/load_lora_adapter":
                path = body.get("lora_path")
                if not name or not path:
                    return self._send(400, {"error": "lora_name and lora_path required"})
                if name in srv.loras:
                    return self._send(400, {"error": f"The lora adapter '{name}' has already been loaded."})
                if not (Path(path) / "adapter_config.json").is_file():
                    return self._send(400, {"error": f"No adapter found for {path}"})
                srv.loras[name] = path
                if srv.max_loras is not None and len(srv.loras) > srv.max_loras:
                    srv.loras.pop(next(iter(srv.loras)))
                return self._send(200, f"Success: LoRA adapter '{name}' added successfully.")
            if self.path == "/v1/unload_lora_adapter":
                if name not in srv.loras:
                    return self._send(404, {"error": f"The lora adapter '{name}' cannot be found."})
                del srv.loras[name]
                return self._send(200, f"Success: LoRA adapter '{name}' removed successfully.")
        self._send(404, {"detail": "Not Found"})


def make_adapter(folder: Path) -> Path:
    """A folder that looks like a PEFT LoRA adapter (config + weights file)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    return folder

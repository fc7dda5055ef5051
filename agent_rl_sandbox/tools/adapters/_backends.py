"""Serving backends behind one small interface, and the vLLM one over plain HTTP.

A backend serves a base model and, under names of their own, LoRA adapters on top of it; a request
picks one by its ``model`` name. :class:`ServingBackend` is all the registry needs: load an adapter
under a name, unload it, list the names served now. Routing a behaviour to a name is the
:class:`~agent_rl_sandbox.tools.adapters._routes.RouteTable`'s job, not the backend's, so the kill
switch is a route change to the base model's name and works even when the backend has already
evicted or lost the adapter.

:class:`VllmBackend` talks to ``vllm serve BASE --enable-lora`` started with
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``::

    POST /v1/load_lora_adapter    {"lora_name": NAME, "lora_path": PATH}  200 | 400 (already loaded, bad path)
    POST /v1/unload_lora_adapter  {"lora_name": NAME}                     200 | 404 (not loaded)
    GET  /v1/models               {"data": [{"id": BASE}, {"id": NAME, "parent": BASE}, ...]}

It uses :mod:`urllib.request` only (no client library). The local PEFT backend (``load_adapter``,
``disable_adapter()``) needs torch and lives with the trainers, not here.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class BackendError(RuntimeError):
    """The serving backend refused a call or could not be reached; the message says which and what
    to do next."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status, or ``None`` when the server was not reached."""


@runtime_checkable
class ServingBackend(Protocol):
    """What the adapter registry needs from a serving backend."""

    @property
    def base_model(self) -> str:
        """The base model's served name: where the kill switch routes a behaviour."""
        ...

    def load(self, name: str, path: Path) -> None:
        """Serve the adapter in folder ``path`` under ``name``. Raises :class:`BackendError`."""
        ...

    def unload(self, name: str) -> None:
        """Stop serving ``name``. Raises :class:`BackendError` (status 404 when it was not loaded)."""
        ...

    def served(self) -> frozenset[str]:
        """Every model name the backend answers to now, the base model's included. Raises
        :class:`BackendError`."""
        ...


class VllmBackend:
    """A vLLM OpenAI-compatible server with runtime LoRA updating, over plain HTTP.

    ``base_url`` is the server's root (``http://127.0.0.1:8000``); ``api_key`` is sent as a bearer
    token when set; ``timeout_s`` bounds each call."""

    def __init__(self, base_url: str, base_model: str, *, api_key: str | None = None, timeout_s: float = 10.0):
        self._url = base_url.rstrip("/")
        self._base = base_model
        self._api_key = api_key
        self._timeout = timeout_s

    @property
    def base_model(self) -> str:
        return self._base

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self._url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self._api_key:
            req.add_header("Authorization", f"Bearer {self._api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            raise BackendError(
                f"vLLM {method} {path} answered {exc.code}: {detail}. Next step: check the server log and the "
                "adapter name/path.",
                status=exc.code,
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise BackendError(
                f"vLLM at {self._url} unreachable ({exc}). Next step: start it with --enable-lora and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, or fix the URL."
            ) from None

    def load(self, name: str, path: Path) -> None:
        self._call("POST", "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})

    def unload(self, name: str) -> None:
        self._call("POST", "/v1/unload_lora_adapter", {"lora_name": name})

    def served(self) -> frozenset[str]:
        _, raw = self._call("GET", "/v1/models")
        try:
            doc = json.loads(raw)
            return frozenset(str(m["id"]) for m in doc["data"])
        except (ValueError, KeyError, TypeError):
            raise BackendError(
                f"vLLM at {self._url}: /v1/models is not a model list. Next step: point at a vLLM server."
            ) from None

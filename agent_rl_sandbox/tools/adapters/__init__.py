"""Adapters and their unhooks: the registry, serving backends, the route each behaviour takes, and
the dry run that proves the kill switch and the rollback work before a deploy.

Public surface:

- :class:`AdapterRegistry` (:class:`AdapterRecord`, :class:`AdapterEvent`, :class:`AdapterError`,
  :func:`content_hash`): candidates, deploy, disable (the kill switch), enable, rollback, audit rows.

- :class:`ServingBackend` (Protocol), :class:`VllmBackend`, :class:`BackendError`.
- :class:`RouteTable`: behaviour -> served model name; the kill switch routes to the base model.
- :func:`dry_run_unhooks`, :class:`UnhookCheck`: the disable and rollback paths, exercised.
"""

from agent_rl_sandbox.tools.adapters._backends import BackendError, ServingBackend, VllmBackend
from agent_rl_sandbox.tools.adapters._registry import (
    AdapterError,
    AdapterEvent,
    AdapterRecord,
    AdapterRegistry,
    content_hash,
)
from agent_rl_sandbox.tools.adapters._routes import RouteTable
from agent_rl_sandbox.tools.adapters._unhooks import UnhookCheck, dry_run_unhooks

__all__ = [
    "AdapterError",
    "AdapterEvent",
    "AdapterRecord",
    "AdapterRegistry",
    "BackendError",
    "RouteTable",
    "ServingBackend",
    "UnhookCheck",
    "VllmBackend",
    "content_hash",
    "dry_run_unhooks",
]

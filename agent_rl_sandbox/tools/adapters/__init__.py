"""Adapters and their unhooks: serving backends, the route each behaviour takes, and the dry run
that proves the kill switch and the rollback work before a deploy (the registry comes next).

Public surface:

- :class:`ServingBackend` (Protocol), :class:`VllmBackend`, :class:`BackendError`.
- :class:`RouteTable`: behaviour -> served model name; the kill switch routes to the base model.
- :func:`dry_run_unhooks`, :class:`UnhookCheck`: the disable and rollback paths, exercised.
"""

from agent_rl_sandbox.tools.adapters._backends import BackendError, ServingBackend, VllmBackend
from agent_rl_sandbox.tools.adapters._routes import RouteTable
from agent_rl_sandbox.tools.adapters._unhooks import UnhookCheck, dry_run_unhooks

__all__ = ["BackendError", "RouteTable", "ServingBackend", "UnhookCheck", "VllmBackend", "dry_run_unhooks"]

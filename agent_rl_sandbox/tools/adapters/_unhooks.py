"""The unhook dry run a deploy must pass: the disable path and the rollback path, exercised
against the serving backend before anything goes live.

:func:`dry_run_unhooks` never touches a live route. Steps, each recorded with its outcome:

1. ``load``: load the candidate under a throw-away name (``<name>.dryrun``) and see it listed.
2. ``disable``: the kill switch's target, the base model's name, is served; unloading the
   throw-away name works and it is no longer listed.
3. ``rollback``: the rollback target (the pinned previous adapter, or the base model) is served;
   a previous adapter not loaded now is loaded under its name and listed.

The result is ``ok`` only when every step passed; the registry records it and deploys only then.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.tools.adapters._backends import BackendError, ServingBackend


@dataclass
class UnhookCheck:
    """The outcome of one dry run."""

    ok: bool = True
    steps: list[dict[str, Any]] = field(default_factory=list)
    """``{"step", "ok", "detail"}`` per step, in order."""

    def _step(self, step: str, ok: bool, detail: str) -> bool:
        self.steps.append({"step": step, "ok": ok, "detail": detail})
        self.ok = self.ok and ok
        return ok

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def dry_run_unhooks(
    backend: ServingBackend, *, name: str, path: Path, previous: tuple[str, Path] | None
) -> UnhookCheck:
    """Exercise load, disable and rollback for candidate ``name`` at ``path`` (see the module
    docstring). ``previous`` is the pinned previous adapter ``(name, path)``, or ``None`` for a
    rollback to the base model. Never raises :class:`BackendError`; a failure is a failed step."""
    check = UnhookCheck()
    probe = f"{name}.dryrun"
    try:
        backend.load(probe, path)
        listed = probe in backend.served()
        if not check._step("load", listed, f"{probe} loaded" if listed else f"{probe} not listed after load"):
            return check
        base_ok = backend.base_model in backend.served()
        check._step("disable", base_ok, f"base {backend.base_model} served" if base_ok else "base model not served")
        backend.unload(probe)
        gone = probe not in backend.served()
        check._step("disable", gone, f"{probe} unloaded" if gone else f"{probe} still listed after unload")
        if previous is None:
            check._step("rollback", base_ok, "rollback target is the base model")
        else:
            prev_name, prev_path = previous
            if prev_name not in backend.served():
                backend.load(prev_name, prev_path)
            listed = prev_name in backend.served()
            check._step("rollback", listed, f"previous {prev_name} served" if listed else f"{prev_name} not listed")
    except BackendError as exc:
        check._step("backend", False, str(exc))
    return check

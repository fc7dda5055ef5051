"""The adapter registry: candidates from gate-passing jobs, deploys behind validated unhooks, the kill
switch, rollback and human-only re-enabling, each change one audit row.

States (``adapters.state``)::

    candidate --deploy (human; files match; unhook dry run passed)--> deployed
    deployed  --disable (anyone: the kill switch)-------------------> disabled
    disabled  --enable (human; files match; dry run passed again)---> deployed
    deployed | disabled --rollback (human)--------------------------> retired
    deployed | disabled --another adapter of the behaviour deploys--> retired
    retired   --rollback of the adapter deployed after it (human)---> deployed

At most one adapter per behaviour is ``deployed``. A deploy pins the adapter that was deployed for
the behaviour before it (``previous_adapter_id``; ``None`` means the base model): rollback returns
to exactly that one (if its files still match their hash) or to the base model.

Serving: a deploy loads the adapter into the :class:`~._backends.ServingBackend` under its served
name and routes the behaviour to that name in the :class:`~._routes.RouteTable`; the kill switch
rewrites the route to the base model's name first and only then updates the registry (and unloads
best-effort), so it works with the backend down and with the adapter already evicted. Rows change
with conditional updates (``WHERE state = :from``), so racing calls change a row once. Every change
(and every refused deploy, with its unhook dry run) is an ``adapter_events`` row: who, when, from,
to, reason. Only :meth:`AdapterRegistry.list`, :meth:`AdapterRegistry.get` and
:meth:`AdapterRegistry.disable` are for agents (the MCP tools); the rest is human-only.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, Engine

from agent_rl_sandbox.schemas.adapters import (
    AdapterDisableInput,
    AdapterDisableOutput,
    AdapterListInput,
    AdapterListOutput,
    AdapterView,
)
from agent_rl_sandbox.tools._caller import OPERATOR, Caller
from agent_rl_sandbox.tools.adapters._backends import BackendError, ServingBackend
from agent_rl_sandbox.tools.adapters._routes import RouteTable
from agent_rl_sandbox.tools.adapters._unhooks import dry_run_unhooks
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.store import new_id, utcnow
from agent_rl_sandbox.tools.store._schema import adapter_events, adapters

log = logging.getLogger(__name__)

AdapterState = Literal["candidate", "deployed", "disabled", "retired"]
AdapterActor = Literal["agent", "human", "worker", "system"]


class AdapterError(ActionError):
    """A registry change that cannot be made (unknown adapter, wrong state, files changed, unhooks
    not validated, no serving backend); the hint says what to do next."""


def content_hash(folder: Path) -> str:
    """SHA-256 over the adapter folder: every regular file's relative path and bytes, in sorted
    order. Raises :class:`AdapterError` for a missing folder, a symlink inside it or no files."""
    if not folder.is_dir():
        raise AdapterError(f"adapter folder {folder} does not exist", "check the job's workspace adapter/ folder")
    h = hashlib.sha256()
    files = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = Path(dirpath) / name
            if full.is_symlink():
                raise AdapterError(f"adapter file {full} is a symlink", "copy the real files into the adapter folder")
            rel = full.relative_to(folder).as_posix().encode()
            h.update(len(rel).to_bytes(4, "big") + rel)
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
            files += 1
    if files == 0:
        raise AdapterError(f"adapter folder {folder} is empty", "the train stage must write the adapter's files")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class AdapterRecord:
    """One registered adapter."""

    adapter_id: str
    behaviour: str
    base_model: str
    job_id: str
    spec_hash: str
    path: str
    content_hash: str
    """SHA-256 of the adapter files at registration (:func:`content_hash`)."""
    gate_report: dict[str, Any] | None
    state: str
    served_name: str
    """The ``model`` name the serving backend serves it under."""
    previous_adapter_id: str | None
    """Pinned at deploy: the adapter rollback returns to (``None``: the base model)."""
    unhooks: dict[str, Any] | None
    """The last unhook dry run (``{"ok", "steps"}``)."""
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class AdapterEvent:
    """One audit row."""

    at: str
    actor: str
    who: str
    from_state: str | None
    to_state: str
    reason: str


def _record(r: Any) -> AdapterRecord:
    return AdapterRecord(
        adapter_id=r["adapter_id"], behaviour=r["behaviour"], base_model=r["base_model"], job_id=r["job_id"],
        spec_hash=r["spec_hash"], path=r["path"], content_hash=r["content_hash"],
        gate_report=json.loads(r["gate_report_json"]) if r["gate_report_json"] else None, state=r["state"],
        served_name=r["served_name"], previous_adapter_id=r["previous_adapter_id"],
        unhooks=json.loads(r["unhooks_json"]) if r["unhooks_json"] else None,
        created_at=r["created_at"], updated_at=r["updated_at"],
    )  # fmt: skip


def _served_name(behaviour: str, adapter_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", behaviour)[:120] + "--" + adapter_id


class AdapterRegistry:
    """The registry on a store's engine, the route table, and (for deploy, enable and rollback) a
    serving backend from ``backend_factory`` (``None``: not configured; those calls are refused,
    the kill switch still works)."""

    def __init__(
        self,
        engine: Engine,
        routes: RouteTable,
        backend_factory: Callable[[], ServingBackend | None] = lambda: None,
        base_name: str | None = None,
    ):
        self.engine = engine
        self._read = engine.execution_options(readonly=True)
        self.routes = routes
        self._backend_factory = backend_factory
        self.base_name = base_name
        """The base model's served name, written as the route by the kill switch (``None``: the
        route is removed, which every client reads as the base model)."""

    # -- reads ------------------------------------------------------------------------------------

    def get(self, adapter_id: str) -> AdapterRecord:
        """The adapter. Raises :class:`AdapterError` if unknown."""
        with self._read.connect() as conn:
            row = conn.execute(select(adapters).where(adapters.c.adapter_id == adapter_id)).mappings().first()
        if row is None:
            raise AdapterError(f"unknown adapter {adapter_id!r}", "list adapters (adapter_list / `adapters list`)")
        return _record(row)

    def list(self, *, behaviour: str | None = None, state: str | None = None) -> builtins.list[AdapterRecord]:
        """Adapters, newest first, filtered by behaviour and state."""
        q = select(adapters)
        if behaviour is not None:
            q = q.where(adapters.c.behaviour == behaviour)
        if state is not None:
            q = q.where(adapters.c.state == state)
        with self._read.connect() as conn:
            return [_record(r) for r in conn.execute(q.order_by(adapters.c.created_at.desc())).mappings()]

    def events(self, adapter_id: str) -> builtins.list[AdapterEvent]:
        """The adapter's audit rows, oldest first."""
        q = select(adapter_events).where(adapter_events.c.adapter_id == adapter_id).order_by(adapter_events.c.id)
        with self._read.connect() as conn:
            return [
                AdapterEvent(r["at"], r["actor"], r["who"], r["from_state"], r["to_state"], r["reason"])
                for r in conn.execute(q).mappings()
            ]

    def deployed(self, behaviour: str) -> AdapterRecord | None:
        """The adapter deployed for ``behaviour`` now, if any."""
        found = self.list(behaviour=behaviour, state="deployed")
        return found[0] if found else None

    # -- writes -----------------------------------------------------------------------------------

    @staticmethod
    def _event(conn: Connection, a: AdapterRecord, actor: str, who: str, src: str | None, dst: str, reason: str):
        conn.execute(
            insert(adapter_events).values(
                adapter_id=a.adapter_id,
                behaviour=a.behaviour,
                at=utcnow(),
                actor=actor,
                who=who,
                from_state=src,
                to_state=dst,
                reason=reason,
            )  # fmt: skip
        )

    def _move(
        self, conn: Connection, a: AdapterRecord, src: str, dst: str, actor: str, who: str, reason: str, **values
    ):
        res = conn.execute(
            update(adapters)
            .where(adapters.c.adapter_id == a.adapter_id, adapters.c.state == src)
            .values(state=dst, updated_at=utcnow(), **values)
        )
        if res.rowcount != 1:
            raise AdapterError(
                f"adapter {a.adapter_id} is no longer {src} (changed meanwhile); nothing changed",
                "show it (`adapters show`) and decide again",
            )
        self._event(conn, a, actor, who, src, dst, reason)

    def register_candidate(
        self, *, job_id: str, behaviour: str, base_model: str, spec_hash: str, path: Path,
        gate_report: dict[str, Any] | None, who: str = "worker",
    ) -> AdapterRecord:  # fmt: skip
        """Register the adapter of a gate-passing job as a ``candidate`` with the content hash of its
        files. Raises :class:`AdapterError` when the folder is missing, empty or holds a symlink, or
        the job already has an adapter."""
        digest = content_hash(path)
        aid = new_id("adp")
        now = utcnow()
        rec = AdapterRecord(
            adapter_id=aid, behaviour=behaviour, base_model=base_model, job_id=job_id, spec_hash=spec_hash,
            path=str(path), content_hash=digest, gate_report=gate_report, state="candidate",
            served_name=_served_name(behaviour, aid), previous_adapter_id=None, unhooks=None, created_at=now, updated_at=now,
        )  # fmt: skip
        with self.engine.begin() as conn:
            if conn.execute(select(adapters.c.adapter_id).where(adapters.c.job_id == job_id)).first() is not None:
                raise AdapterError(f"job {job_id} already has an adapter", "list adapters to find it")
            conn.execute(
                insert(adapters).values(
                    adapter_id=aid,
                    behaviour=behaviour,
                    base_model=base_model,
                    job_id=job_id,
                    spec_hash=spec_hash,
                    path=str(path),
                    content_hash=digest,
                    state="candidate",
                    served_name=rec.served_name,
                    gate_report_json=json.dumps(gate_report) if gate_report is not None else None,
                    created_at=now,
                    updated_at=now,
                )  # fmt: skip
            )
            self._event(conn, rec, "worker", who, None, "candidate", f"gate passed: job {job_id}")
        return rec

    def _backend(self) -> ServingBackend:
        backend = self._backend_factory()
        if backend is None:
            raise AdapterError(
                "no serving backend is configured",
                "set AGENT_RL_SANDBOX_VLLM_URL and AGENT_RL_SANDBOX_VLLM_BASE_MODEL to the vLLM server",
            )
        return backend

    def _files_match(self, a: AdapterRecord) -> str | None:
        """``None`` when the files still hash to the registered hash, else why not."""
        try:
            got = content_hash(Path(a.path))
        except AdapterError as exc:
            return exc.message
        return None if got == a.content_hash else f"adapter files changed: sha256 {got} != registered {a.content_hash}"

    def _refuse(self, a: AdapterRecord, who: str, why: str, hint: str, unhooks: dict | None = None) -> AdapterError:
        with self.engine.begin() as conn:
            if unhooks is not None:
                conn.execute(
                    update(adapters)
                    .where(adapters.c.adapter_id == a.adapter_id)
                    .values(unhooks_json=json.dumps(unhooks))
                )
            self._event(conn, a, "human", who, a.state, a.state, f"refused: {why}")
        return AdapterError(f"adapter {a.adapter_id}: {why}; nothing deployed", hint)

    def _validated_load(
        self, a: AdapterRecord, who: str, action: str
    ) -> tuple[ServingBackend, AdapterRecord | None, dict]:
        """Files check, unhook dry run (recorded), then load: what deploy and enable share."""
        backend = self._backend()
        why = self._files_match(a)
        if why is not None:
            raise self._refuse(a, who, why, f"{action} only the files the gate passed; run a new job to change them")
        previous = self.deployed(a.behaviour)
        prev = (previous.served_name, Path(previous.path)) if previous is not None else None
        check = dry_run_unhooks(backend, name=a.served_name, path=Path(a.path), previous=prev).as_dict()
        if not check["ok"]:
            failed = "; ".join(f"{s['step']}: {s['detail']}" for s in check["steps"] if not s["ok"])
            raise self._refuse(
                a, who, f"unhooks not validated ({failed})",
                "fix the serving backend so the disable and rollback paths work, then try again", check,
            )  # fmt: skip
        try:
            if a.served_name not in backend.served():
                backend.load(a.served_name, Path(a.path))
        except BackendError as exc:
            raise self._refuse(a, who, f"load failed ({exc})", "check the serving backend", check) from None
        return backend, previous, check

    def deploy(self, adapter_id: str, who: str) -> AdapterRecord:
        """Human-only: deploy a gate-passed candidate whose files still match their hash, after its
        unhook dry run (disable and rollback paths against the backend) passed; pins the adapter
        deployed before it as the rollback target and retires it. Raises :class:`AdapterError`
        otherwise (the refusal and the dry run are recorded)."""
        a = self.get(adapter_id)
        if a.state != "candidate":
            raise AdapterError(f"adapter {adapter_id} is {a.state}, not a candidate", _hint_for(a.state))
        _, previous, check = self._validated_load(a, who, "deploy")
        self.routes.set(a.behaviour, a.served_name)
        superseded = self.list(behaviour=a.behaviour, state="disabled")
        with self.engine.begin() as conn:
            for old in superseded:
                self._move(conn, old, "disabled", "retired", "human", who, f"superseded by {a.adapter_id}")
            if previous is not None:
                self._move(conn, previous, "deployed", "retired", "human", who, f"superseded by {a.adapter_id}")
            self._move(
                conn, a, "candidate", "deployed", "human", who, "deployed after a passing unhook dry run",
                previous_adapter_id=previous.adapter_id if previous else None, unhooks_json=json.dumps(check),
            )  # fmt: skip
        return self.get(adapter_id)

    def disable(
        self, behaviour: str, who: str, actor: AdapterActor = "human", reason: str = "kill switch"
    ) -> AdapterRecord | None:
        """The kill switch, open to anyone: route ``behaviour`` to the base model at once, then mark
        its deployed adapter ``disabled`` and unload it best-effort. Returns the adapter it disabled,
        or ``None`` when none was deployed (the route is set to the base model anyway)."""
        self.routes.set(behaviour, self.base_name)
        a = self.deployed(behaviour)
        if a is None:
            return None
        with self.engine.begin() as conn:
            try:
                self._move(conn, a, "deployed", "disabled", actor, who, reason[:500])
            except AdapterError:
                return self.get(a.adapter_id)  # someone else disabled or rolled it back meanwhile
        try:
            backend = self._backend_factory()
            if backend is not None:
                backend.unload(a.served_name)
        except BackendError as exc:
            log.info("unload of %s after the kill switch: %s (the route is already the base model)", a.served_name, exc)
        return self.get(a.adapter_id)

    def enable(self, adapter_id: str, who: str) -> AdapterRecord:
        """Human-only: re-deploy a disabled adapter (files must match, the unhook dry run passes
        again, no other adapter deployed for its behaviour). Raises :class:`AdapterError`."""
        a = self.get(adapter_id)
        if a.state != "disabled":
            raise AdapterError(f"adapter {adapter_id} is {a.state}, not disabled", _hint_for(a.state))
        other = self.deployed(a.behaviour)
        if other is not None:
            raise AdapterError(
                f"adapter {other.adapter_id} is deployed for {a.behaviour}", "disable or roll it back first"
            )
        _, _, check = self._validated_load(a, who, "enable")
        self.routes.set(a.behaviour, a.served_name)
        with self.engine.begin() as conn:
            self._move(
                conn, a, "disabled", "deployed", "human", who, "re-enabled by a human", unhooks_json=json.dumps(check)
            )
        return self.get(adapter_id)

    def rollback(self, behaviour: str, who: str) -> AdapterRecord | None:
        """Human-only: retire the behaviour's current (deployed or disabled) adapter and return to its
        pinned previous adapter when that one's files still match (loaded and routed), else to the
        base model. Returns the adapter now deployed, or ``None`` for the base model. Raises
        :class:`AdapterError` when the behaviour has no current adapter."""
        current = self.deployed(behaviour) or next(iter(self.list(behaviour=behaviour, state="disabled")), None)
        if current is None:
            raise AdapterError(f"no deployed or disabled adapter for {behaviour}", "list adapters for the behaviour")
        target = self.get(current.previous_adapter_id) if current.previous_adapter_id else None
        why_base = "no pinned previous adapter"
        if target is not None:
            why = self._files_match(target)
            try:
                if why is None:
                    backend = self._backend()
                    if target.served_name not in backend.served():
                        backend.load(target.served_name, Path(target.path))
            except (BackendError, AdapterError) as exc:
                why = str(exc)
            if why is not None:
                why_base, target = f"previous {target.adapter_id} unusable: {why}", None
        self.routes.set(behaviour, target.served_name if target else self.base_name)
        with self.engine.begin() as conn:
            to = target.adapter_id if target else "the base model"
            self._move(conn, current, current.state, "retired", "human", who, f"rolled back to {to}")
            if target is not None:
                self._move(conn, target, target.state, "deployed", "human", who, f"rollback from {current.adapter_id}")
            else:
                log.info("rollback of %s to the base model: %s", behaviour, why_base)
        return self.get(target.adapter_id) if target else None

    # -- the MCP tools (anyone: read, and the kill switch) ------------------------------------------

    @staticmethod
    def view(a: AdapterRecord) -> AdapterView:
        """The tools' view of ``a``."""
        return AdapterView(
            adapter_id=a.adapter_id, behaviour=a.behaviour, base_model=a.base_model, job_id=a.job_id,
            state=a.state, served_name=a.served_name, content_hash=a.content_hash,
            previous_adapter_id=a.previous_adapter_id, created_at=a.created_at, updated_at=a.updated_at,
        )  # fmt: skip

    def adapter_list(self, inp: AdapterListInput) -> AdapterListOutput:
        """Registered adapters (newest first) and the current routes."""
        found = self.list(behaviour=inp.behaviour, state=inp.state)
        return AdapterListOutput(adapters=[self.view(a) for a in found[:200]], routes=self.routes.read())

    def adapter_disable(self, inp: AdapterDisableInput, caller: Caller = OPERATOR) -> AdapterDisableOutput:
        """The kill switch for ``inp.behaviour``, open to every caller (see :meth:`disable`)."""
        actor: AdapterActor = "human" if caller.operator else "agent"
        done = self.disable(inp.behaviour, caller.owner_id, actor, inp.reason)
        route = self.routes.model_for(inp.behaviour, self.base_name or "the base model")
        note = (
            f"{inp.behaviour} now goes to the base model; adapter {done.adapter_id} is {done.state}. "
            "Only a human can turn it back on."
            if done is not None
            else f"no adapter was deployed for {inp.behaviour}; it goes to the base model"
        )
        return AdapterDisableOutput(
            behaviour=inp.behaviour, route=route, disabled=self.view(done) if done else None, note=note
        )


def _hint_for(state: str) -> str:
    return {
        "deployed": "it is live already; `adapters disable` or `adapters rollback` change that",
        "disabled": "re-enable it with `adapters enable` (a human), or deploy a new candidate",
        "retired": "deploy a new candidate, or roll back the adapter that replaced it",
    }.get(state, "list adapters to see their states")

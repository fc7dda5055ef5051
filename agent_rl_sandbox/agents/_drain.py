"""The hook drainer: folds queued hook events (:mod:`agent_rl_sandbox.agents.hooks`) into the store.

One drainer runs at a time per home (``<home>/hooks/drain.lock``, ``flock``). It works in batches:

1. claim: under the queue's lock, rename ``queue.jsonl`` to ``batch.<store>.<ns>.<pid>.jsonl`` (hooks
   append to a fresh queue from then on). Each store has its own queue, lock and batches
   (:func:`~agent_rl_sandbox.agents.hooks.store_key`); a drainer folds those of its own store only;
2. fold each line in order with :func:`~agent_rl_sandbox.agents.claude_code.hook.record_event`,
   writing the count of folded lines to ``batch....done`` after each, and delete the batch when it
   is done. A batch left by a drainer that died is folded first, from its ``.done`` count (a line
   folded twice adds nothing: its steps carry client step ids from the queue id);
3. when the store cannot be written (locked past the busy timeout, unreachable), stop and leave the
   batch for the next drain: **no event is lost**. An event that fails for any other reason (a bug,
   a malformed event) is appended, redacted, to ``<home>/hooks/failed-events.jsonl`` with the error,
   so one bad event never blocks the rest; so is an event that arrived after its session ended;
4. before leaving, finish the hook trajectories idle for ``AGENT_RL_SANDBOX_IDLE_SECONDS`` (default an
   hour; :func:`finish_idle`): Codex sends no SessionEnd and a crashed client sends none either, so
   without this their last turn's end would stay pending and the trajectory running forever;
5. with ``linger_s``, wait that long for more events before exiting (one process and one store
   connection serve a burst of hook events; the background drainer lingers
   ``AGENT_RL_SANDBOX_HOOK_LINGER`` seconds, default 20). Before exiting it releases the lock and
   looks once more, so an event queued while it was leaving is never stranded. A foreground drain
   that finds the lock held touches ``drain.wanted.<store>``, and a lingering drainer stops
   lingering at once (``hook drain`` does not wait out the linger).

``python -m agent_rl_sandbox.agents._drain`` is the background drainer the hook starts;
``agent-rl-sandbox hook drain`` runs :func:`drain` in the foreground (waits for a running drainer).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_rl_sandbox.agents.hooks import FAILED_EVENTS, fcntl, hooks_dir, lock_name, queue_name, store_key

log = logging.getLogger("agent_rl_sandbox.hook")

FAILED = FAILED_EVENTS
_POLL_S = 0.1


@dataclass
class DrainReport:
    """What one :func:`drain` did."""

    folded: int = 0
    """Events recorded (or found already recorded)."""
    failed: int = 0
    """Events set aside in ``failed-events.jsonl`` (bad events, events after SessionEnd)."""
    left: int = 0
    """Events still queued because the store could not be written."""
    problems: list[str] = field(default_factory=list)
    locked_out: bool = False
    """Another drainer held the lock (nothing was done)."""
    finished_idle: int = 0
    """Hook trajectories finished because their session went idle (:func:`finish_idle`)."""
    held: int = 0
    """Events in ``failed-events.jsonl`` after the drain, of any drain or hook (:func:`count_failed`)."""


def count_failed(folder: Path) -> int:
    """How many events ``folder``'s ``failed-events.jsonl`` holds (its non-blank lines; 0 without it):
    those the drainer set aside and the hook input that was no JSON object (kept raw)."""
    try:
        with (folder / FAILED).open("rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def _transient(e: BaseException) -> bool:
    """Whether ``e`` means "the store cannot be written now" (retry later) rather than a bad event."""
    from sqlalchemy.exc import InterfaceError, OperationalError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    return isinstance(e, OperationalError | InterfaceError | PoolTimeout | TimeoutError)


def _set_aside(folder: Path, record: Any, why: str) -> None:
    """Append a redacted event to ``failed-events.jsonl`` with the reason."""
    from agent_rl_sandbox.tools.store._redact import Redactor
    from agent_rl_sandbox.tools.trajectories import utcnow

    value, _ = Redactor().value(record)
    line = json.dumps({"at": utcnow(), "error": why, "event": value}, ensure_ascii=False, default=str)
    fd = os.open(folder / FAILED, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8") + b"\n")
    finally:
        os.close(fd)


def _claim(folder: Path, key: str) -> Path | None:
    """Rename a non-empty queue to a batch file (under the queue's lock); None when it is empty."""
    queue = folder / queue_name(key)
    try:
        fd = os.open(queue, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size == 0:
            return None
        batch = folder / f"batch.{key}.{time.time_ns():020d}.{os.getpid()}.jsonl"
        os.rename(queue, batch)
        return batch
    finally:
        os.close(fd)


def _fold_batch(store, folder: Path, batch: Path, report: DrainReport) -> bool:
    """Fold one batch from its ``.done`` count; True when it is finished (and deleted)."""
    from agent_rl_sandbox.agents.claude_code.hook import CLIENTS, record_event

    done_path = batch.with_suffix(".done")
    try:
        done = int(done_path.read_text() or 0)
    except (FileNotFoundError, ValueError):
        done = 0
    lines = batch.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if i < done or not line.strip():
            continue
        try:
            rec = json.loads(line)
            client = CLIENTS[rec["client"]]
            res = record_event(store, rec["event"], client=client, qid=rec.get("qid"), at=rec.get("at"))
            for p in res.problems:
                report.problems.append(p)
            if res.late:
                _set_aside(folder, rec, res.problems[-1])
                report.failed += 1
            else:
                report.folded += 1
        except BaseException as e:  # noqa: BLE001 - sorted into "retry later" and "set aside"
            why = f"{type(e).__name__}: {e}"
            if _transient(e):
                report.left += sum(1 for rest in lines[i:] if rest.strip())
                report.problems.append(f"store not writable now, {report.left} event(s) stay queued: {why}")
                return False
            report.failed += 1
            report.problems.append(f"event set aside in {folder / FAILED}: {why}")
            try:
                _set_aside(folder, json.loads(line) if line.strip().startswith(b"{") else line.decode(), why)
            except Exception as e2:  # noqa: BLE001
                report.problems.append(f"could not set the event aside: {e2}")
        done_path.write_text(str(i + 1))
    batch.unlink()
    done_path.unlink(missing_ok=True)
    return True


def finish_idle(store, idle_s: float, report: DrainReport) -> int:
    """Finish hook trajectories with no activity for ``idle_s`` seconds as if their session had
    ended (a SessionEnd with ``reason: "idle"``: pending calls become ``unknown`` steps, the pending
    end of turn is written, its message becomes the final message). Returns how many were finished."""
    from datetime import UTC, datetime, timedelta

    from agent_rl_sandbox.agents.claude_code.hook import CLIENTS, record_event

    before = (datetime.now(UTC) - timedelta(seconds=idle_s)).isoformat()
    done = 0
    for _sid, origin, external_id in store.trajectories.idle_hook_sessions(before):
        client = next((c for c in CLIENTS.values() if c.origin == origin), None)
        if client is None or not external_id.startswith(client.external_prefix):
            continue
        csid = external_id[len(client.external_prefix) :]
        try:
            res = record_event(
                store, {"hook_event_name": "SessionEnd", "session_id": csid, "reason": "idle"}, client=client
            )
        except BaseException as e:  # noqa: BLE001 - another try at the next drain
            report.problems.append(f"could not finish idle {client.name} session {csid}: {type(e).__name__}: {e}")
            continue
        done += int(res.finished)
    return done


def _try_lock(folder: Path, key: str, wait_s: float | None) -> int | None:
    """The drain lock's fd, or None when another drainer keeps it (past ``wait_s``; None: don't wait)."""
    fd = os.open(folder / lock_name(key), os.O_RDWR | os.O_CREAT, 0o600)
    if fcntl is None:
        return fd
    deadline = time.monotonic() + (wait_s or 0)
    wanted = folder / _wanted_name(key)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if wait_s is None or time.monotonic() >= deadline:
                    os.close(fd)
                    return None
                wanted.touch()  # a drainer lingering for more events leaves now (see drain)
                time.sleep(_POLL_S)
    finally:
        if wait_s is not None:
            wanted.unlink(missing_ok=True)


def _wanted_name(key: str) -> str:
    """The file a waiting :func:`drain` touches so that a lingering drainer stops lingering."""
    return f"drain.wanted.{key}"


def _pending(folder: Path, key: str) -> bool:
    try:
        if (folder / queue_name(key)).stat().st_size > 0:
            return True
    except FileNotFoundError:
        pass
    return any(folder.glob(f"batch.{key}.*.jsonl"))


def drain(settings=None, *, linger_s: float = 0.0, wait_s: float | None = 10.0) -> DrainReport:
    """Fold every queued event into the store; then wait up to ``linger_s`` seconds for more.

    ``wait_s`` is how long to wait for a drainer that is running already (``None``: do not wait;
    the report says ``locked_out``). Never raises for store problems: they are in the report, and
    the events stay queued. ``held`` counts ``failed-events.jsonl`` afterwards."""
    from agent_rl_sandbox.settings import Settings

    settings = settings or Settings.from_env()
    folder = hooks_dir(settings.home)
    key = store_key(settings.database_url or "")
    report = DrainReport()
    try:
        return _drain_locked(settings, folder, key, report, linger_s, wait_s)
    finally:
        report.held = count_failed(folder)


def _drain_locked(
    settings, folder: Path, key: str, report: DrainReport, linger_s: float, wait_s: float | None
) -> DrainReport:
    """:func:`drain`'s work under the drain lock of store ``key`` (taken here, released on return)."""
    from agent_rl_sandbox.settings import hook_seconds
    from agent_rl_sandbox.tools.store import Store

    fd = _try_lock(folder, key, wait_s)
    if fd is None:
        report.locked_out = True
        return report
    store = None
    try:
        busy = hook_seconds("AGENT_RL_SANDBOX_HOOK_TIMEOUT") / 2  # a bad value: in the report, events stay queued
        idle_since = time.monotonic()
        swept = False
        while True:
            batches = sorted(folder.glob(f"batch.{key}.*.jsonl"))
            claimed = _claim(folder, key)
            if claimed is not None:
                batches.append(claimed)
            if batches:
                if store is None:
                    store = Store(settings.db_url, busy_timeout_s=max(0.2, busy))
                for b in batches:
                    if not _fold_batch(store, folder, b, report):
                        return report  # the store is not writable: the rest waits for the next drain
                idle_since = time.monotonic()
                continue
            if time.monotonic() - idle_since < linger_s and not (folder / _wanted_name(key)).exists():
                time.sleep(_POLL_S)
                continue
            if not swept:  # once per drain, when the queue is empty
                swept = True
                if store is None:
                    store = Store(settings.db_url, busy_timeout_s=max(0.2, busy))
                report.finished_idle = finish_idle(store, settings.sandbox_idle_seconds, report)
            # Leaving: release the lock, then look once more (a hook that saw the lock held relied on us).
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if not _pending(folder, key):
                return report
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return report  # a new drainer took over
    except BaseException as e:  # noqa: BLE001 - e.g. the store URL is malformed: events stay queued
        report.problems.append(f"drain stopped, events stay queued: {type(e).__name__}: {e}")
        return report
    finally:
        if store is not None:
            store.close()
        os.close(fd)


def fold_inline() -> list[str]:
    """Fold the queue in the calling process (``AGENT_RL_SANDBOX_HOOK_DRAIN=inline``); its problems."""
    from agent_rl_sandbox.settings import hook_seconds

    try:
        wait = hook_seconds("AGENT_RL_SANDBOX_HOOK_TIMEOUT")
    except ValueError as e:
        return [f"bad setting {e}; the event is queued. Next step: fix or unset it"]
    return drain(wait_s=wait).problems


def main() -> int:
    """The background drainer (started by the hook): drain, linger, log problems; exit 0."""
    import signal

    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the client's terminal closing must not cut a fold short
    logging.basicConfig(level=os.environ.get("AGENT_RL_SANDBOX_LOG_LEVEL", "WARNING"), format="%(message)s")
    from agent_rl_sandbox.settings import hook_seconds

    try:
        linger = hook_seconds("AGENT_RL_SANDBOX_HOOK_LINGER")
        problems = drain(linger_s=linger, wait_s=None).problems
    except ValueError as e:  # a bad setting (Settings.from_env names it): the events stay queued
        problems = [f"bad setting {e}; events stay queued"]
    for p in problems:
        log.warning("%s agent-rl-sandbox hook drain: %s", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The lean hook path: ``agent-rl-sandbox hook claude-code|codex`` queues the event and returns.

A client runs its hook command once per event, hundreds of times a session, and waits for it. This
module is what that process runs (dispatched by :func:`agent_rl_sandbox.cli.main` before typer or
anything heavy is imported): standard library only, so one event costs about what starting Python
costs (``bench/hook.py`` measures it against ``python -c pass``). Per event it:

1. reads the event JSON from stdin; a Stop or SessionEnd without ``last_assistant_message`` gets it
   from the tail of ``transcript_path`` (the Claude Code transcript or Codex rollout), read now, while
   that turn is the last one in the file (:func:`transcript_final_message`). Input that is no JSON
   object is kept, raw, in ``<home>/hooks/failed-events.jsonl`` with the reason
   (:func:`set_aside_raw`; ``hook drain`` counts that file's events) and a line on stderr;
2. appends one line ``{"qid", "client", "at", "event"}`` to ``<home>/hooks/queue.jsonl`` (created
   ``0600``, under ``flock``, so concurrent hooks never interleave lines; with
   ``AGENT_RL_SANDBOX_DATABASE_URL`` set, ``queue.<digest of the URL>.jsonl``: an event is folded into
   the store it was recorded for). ``qid`` makes the fold
   idempotent: every step an event makes carries a client step id derived from it;
3. starts the drainer (``python -m agent_rl_sandbox.agents._drain``, its own session, output to
   ``<home>/hooks/drain.log``) unless one is already running. The drainer folds queued events into
   the store in order with one store connection, stays a few seconds for more
   (``AGENT_RL_SANDBOX_HOOK_LINGER``, default 20 s), then exits (:mod:`agent_rl_sandbox.agents._drain`).

Nothing is lost when the store is locked, slow or unreachable: the queue keeps the event until a
drain succeeds (``agent-rl-sandbox hook drain`` folds it now and says why it cannot). The queue holds
events unredacted until they are folded (redaction happens in the store, as for every step); it is
readable by its owner only. ``AGENT_RL_SANDBOX_HOOK_DRAIN=inline`` folds in the hook process itself
(slow: the store's imports, about 0.5 s), ``off`` only queues.

The command prints nothing on stdout and always exits 0: a hook never breaks its client.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

DRAIN_LOG = "drain.log"
TRANSCRIPT_TAIL_BYTES = 1 << 20
"""How much of the end of a transcript is read for the final assistant message (1 MiB)."""
_ENDS = frozenset({"Stop", "SessionEnd", "SubagentStop"})

try:  # POSIX; elsewhere the hook folds inline
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def hook_home() -> Path:
    """The home folder, resolved as :class:`~agent_rl_sandbox.settings.Settings` does
    (``AGENT_RL_SANDBOX_HOME`` or ``~/.agent-rl-sandbox``)."""
    return Path(os.environ.get("AGENT_RL_SANDBOX_HOME") or Path.home() / ".agent-rl-sandbox").expanduser()


def store_key(url: str | None = None) -> str:
    """Which store the queue feeds: ``default`` (the SQLite file in the home) or a digest of
    ``AGENT_RL_SANDBOX_DATABASE_URL`` (default: the environment's), so an event is folded into the
    store it was recorded for, whichever drainer runs."""
    url = os.environ.get("AGENT_RL_SANDBOX_DATABASE_URL") if url is None else url
    if not url:
        return "default"
    import hashlib

    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]


def queue_name(key: str) -> str:
    """``queue.jsonl`` for the default store, ``queue.<key>.jsonl`` for another."""
    return "queue.jsonl" if key == "default" else f"queue.{key}.jsonl"


def lock_name(key: str) -> str:
    """``drain.lock`` for the default store, ``drain.<key>.lock`` for another."""
    return "drain.lock" if key == "default" else f"drain.{key}.lock"


def hooks_dir(home: Path) -> Path:
    """``<home>/hooks``, created ``0700`` if missing."""
    folder = home / "hooks"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _utcnow() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"  # the store's form


def _text_blocks(content: object, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") in kinds]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def _line_turn(obj: object) -> tuple[str, str] | None:
    """What a transcript line is, for finding the turn's final message: ``("assistant", text)``,
    ``("user", text)``, ``("tool", "")`` (a tool call or result: the turn was still working), or
    None (anything else: metadata, summaries, sidechains, unknown kinds).

    Claude Code lines are ``{"type": "assistant"|"user", "message": {"content": ...}}`` (``tool_use``
    and ``tool_result`` blocks are tool lines); Codex rollout lines are ``{"type": "response_item",
    "payload": {"type": "message"|"function_call"|"function_call_output"|..., ...}}`` or
    ``{"type": "event_msg", "payload": {"type": "agent_message"|"user_message", "message": ...}}``."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if kind in ("assistant", "user") and isinstance(obj.get("message"), dict):
        if obj.get("isSidechain") or obj.get("isMeta"):
            return None
        content = obj["message"].get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return ("tool", "")
        text = _text_blocks(content, ("text",))
        return (kind, text) if text else None
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        return None
    ptype = payload.get("type")
    if kind == "response_item" and ptype == "message" and payload.get("role") in ("assistant", "user"):
        text = _text_blocks(payload.get("content"), ("output_text", "input_text", "text"))
        return (payload["role"], text) if text else None
    if kind == "response_item" and isinstance(ptype, str) and ptype.endswith(("_call", "_call_output")):
        return ("tool", "")
    if kind == "event_msg" and ptype in ("agent_message", "user_message"):
        msg = payload.get("message")
        if isinstance(msg, str) and msg:
            return ("assistant" if ptype == "agent_message" else "user", msg)
    return None


def transcript_final_message(path: str | os.PathLike[str]) -> str | None:
    """The final assistant text of the current turn in a Claude Code transcript or Codex rollout
    (JSONL): the last message line, when it is the assistant's. None when the last message is the
    user's, when a tool call or result comes after the last assistant text (that text was said
    mid-turn; the final one is not written yet), or when the file cannot be read. Reads only the
    last :data:`TRANSCRIPT_TAIL_BYTES`; never raises."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            tail = f.read()
    except (OSError, TypeError, ValueError):
        return None
    for line in reversed(tail.split(b"\n")):
        if not line.strip():
            continue
        try:
            turn = _line_turn(json.loads(line))
        except ValueError:
            continue  # a cut first line, or a line still being written
        if turn is not None:
            return turn[1] if turn[0] == "assistant" else None
    return None


def enrich(event: dict) -> dict:
    """Add what only the moment of the event can give: the final assistant message of a Stop,
    SubagentStop or SessionEnd without one, from ``transcript_path`` (``final_message_from``
    says so)."""
    if event.get("hook_event_name") in _ENDS and not event.get("last_assistant_message"):
        # a subagent's own transcript, when the event names it; never the main session's for a subagent
        key = "agent_transcript_path" if event.get("hook_event_name") == "SubagentStop" else "transcript_path"
        path = event.get(key)
        if isinstance(path, str) and path:
            found = transcript_final_message(path)
            if found:
                event["last_assistant_message"] = found
                event["final_message_from"] = "transcript_path"
    return event


def _append_locked(path: Path, line: bytes) -> None:
    """Append one line under an exclusive ``flock``; reopens when the drainer renamed the file
    between our open and our lock (the line then goes to the new queue, never to a claimed batch)."""
    for _ in range(50):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.write(fd, line)
                return
        finally:
            os.close(fd)  # closing releases the lock
    raise OSError(f"could not append to {path}: it kept being replaced")


def enqueue(home: Path, client: str, event: dict) -> str:
    """Append ``event`` (from ``client``: ``claude-code`` or ``codex``) to the queue; returns its qid."""
    qid = os.urandom(16).hex()
    record = {"qid": qid, "client": client, "at": _utcnow(), "event": event}
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8") + b"\n"
    _append_locked(hooks_dir(home) / queue_name(store_key()), line)
    return qid


FAILED_EVENTS = "failed-events.jsonl"
"""Events that cannot be recorded, one JSON line each with the reason, in ``<home>/hooks``: what the
hook could not read (kept raw) and what the drainer set aside (redacted)."""
MAX_RAW_BYTES = 1024 * 1024
"""The most raw bytes of one unreadable hook input kept in :data:`FAILED_EVENTS` (the length is
always recorded)."""


def set_aside_raw(home: Path, client: str, raw: bytes, why: str) -> None:
    """Append hook input that is no JSON object (``raw``, as read from stdin) to
    :data:`FAILED_EVENTS` with ``why``: ``{"at", "client", "error", "raw_bytes", "raw_base64"}``
    (the first :data:`MAX_RAW_BYTES` bytes, exactly as received, so nothing is lost to decoding;
    ``raw_truncated`` when cut). Not redacted: like the queue the file is the owner's only (0600)."""
    import base64

    record = {
        "at": _utcnow(),
        "client": client,
        "error": why,
        "raw_bytes": len(raw),
        "raw_base64": base64.b64encode(raw[:MAX_RAW_BYTES]).decode("ascii"),
    }
    if len(raw) > MAX_RAW_BYTES:
        record["raw_truncated"] = True
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    _append_locked(hooks_dir(home) / FAILED_EVENTS, line)


def drainer_running(home: Path, key: str) -> bool:
    """Whether a drainer for store ``key`` holds its lock (``<home>/hooks/drain.lock``) now."""
    if fcntl is None:
        return False
    fd = os.open(hooks_dir(home) / lock_name(key), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def spawn_drainer(home: Path) -> int | None:
    """Start a background drainer unless one runs; returns its pid (None when one was running).

    The drainer runs in its own session with stdin from ``/dev/null`` and output to
    ``<home>/hooks/drain.log``, so the client never waits for it (its pipes close when we exit)."""
    if drainer_running(home, store_key()):
        return None
    folder = hooks_dir(home)
    log = str(folder / DRAIN_LOG)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    env = dict(os.environ, AGENT_RL_SANDBOX_HOME=str(home))
    argv = [sys.executable, "-m", "agent_rl_sandbox.agents._drain"]
    try:
        return os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)
    except NotImplementedError:  # no POSIX_SPAWN_SETSID here: the drainer then ignores SIGHUP itself
        return os.posix_spawn(sys.executable, argv, env, file_actions=actions)


def _warn(msg: str) -> None:
    try:
        sys.stderr.write(f"agent-rl-sandbox hook: {msg}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stderr must not break the client
        pass


def hook_main(client: str, stdin: object = None, fold: object = None) -> int:
    """Console entry of ``hook claude-code|codex``: read, enrich, queue, start the drainer; return 0
    (always). Problems go to stderr, one line each; stdout stays empty.

    ``fold`` (a callable returning a list of problem lines) folds the queue in this process; the CLI
    passes :func:`agent_rl_sandbox.agents._drain.fold_inline`, used when
    ``AGENT_RL_SANDBOX_HOOK_DRAIN=inline`` (or where there is no ``flock``/``posix_spawn``)."""
    try:
        raw = (stdin or sys.stdin.buffer).read()  # type: ignore[attr-defined]
        why = None
        try:
            event = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            why = f"hook input is not JSON: {e}"
        else:
            if not isinstance(event, dict):
                why = f"hook input is not a JSON object (a {type(event).__name__})"
        home = hook_home()
        if why is not None:
            _warn(f"{why}; kept in {hooks_dir(home) / FAILED_EVENTS}")
            set_aside_raw(home, client, raw, why)
            return 0
        enqueue(home, client, enrich(event))
        mode = os.environ.get("AGENT_RL_SANDBOX_HOOK_DRAIN", "background").strip().lower() or "background"
        if mode == "inline" or (mode == "background" and (fcntl is None or not hasattr(os, "posix_spawn"))):
            if callable(fold):
                for p in fold():
                    _warn(p)
            else:
                _warn("no inline fold available here; the event is queued (run `agent-rl-sandbox hook drain`)")
        elif mode == "background":
            spawn_drainer(home)
        elif mode != "off":
            _warn(f"unknown AGENT_RL_SANDBOX_HOOK_DRAIN={mode!r} (background, inline or off); the event is queued")
    except BaseException as e:  # noqa: BLE001 - never break the client, whatever happened
        _warn(f"{type(e).__name__}: {e}")
    return 0

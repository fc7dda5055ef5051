"""The fixed driver that runs in the child sandbox and imports the agent's code: untrusted by design.

The trusted runner (:mod:`._judge`) starts ``python -c <this file's source>`` in a child sandbox
whose working folder is a read-only export of the final tree, and writes one JSON request per line
to its stdin: ``{"i": case index, "steps": [{"op", "target", "args", "kwargs", "bind"}]}``; the
requests carry calls only, never an expected value. The driver reads every request before importing
anything of the agent's, keeps the original stdout as its result channel and points fd 1 at stderr
(the code under test prints there), then answers each case with one line
``{"i": i, "steps": [{"value": <wire>, "truthy": bool} | {"raised": name, "mro": [names], "message": str}]}``
and stops a case at its first exception.

Wire values: ``{"t": tag, "v": ...}`` with tags ``none bool int float str bytes list tuple dict set
frozenset`` (``dict``: a list of ``[key, value]`` pairs; ``bytes``: hex; ``float``: ``repr`` text);
anything else is ``{"t": "object", "type": qualified name, "repr": text}``, which never equals an
expected value. Nothing here is trusted: agent code shares this process and may rewrite any of it,
print anything or exit; the runner only compares what comes back with expectations it never sent.
This module is stdlib-only and is never imported by the server (it is sent as source).
"""

import importlib
import json
import os
import sys

MAX_ITEMS = 10000
MAX_DEPTH = 40


def enc(v, depth=0):
    t = type(v)
    if depth > MAX_DEPTH:
        return {"t": "object", "type": "too-deep", "repr": ""}
    if v is None:
        return {"t": "none", "v": None}
    if t is bool:
        return {"t": "bool", "v": v}
    if isinstance(v, int) and not isinstance(v, bool):
        i = int.__index__(v)
        if i.bit_length() > 4096:
            return {"t": "object", "type": "int", "repr": "too large"}
        return {"t": "int", "v": str(i)}
    if isinstance(v, float):
        return {"t": "float", "v": repr(float.__float__(v))}
    if isinstance(v, str):
        return {"t": "str", "v": str.__str__(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"t": "bytes", "v": bytes(v).hex()}
    for base, tag in ((tuple, "tuple"), (list, "list"), (set, "set"), (frozenset, "frozenset")):
        if isinstance(v, base):
            items = list(base.__iter__(v))  # type: ignore[arg-type]  # the base's own iterator, not an override
            if len(items) > MAX_ITEMS:
                break
            return {"t": tag, "v": [enc(x, depth + 1) for x in items]}
    if isinstance(v, dict):
        pairs = list(dict.items(v))
        if len(pairs) <= MAX_ITEMS:
            return {"t": "dict", "v": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in pairs]}
    try:
        text = repr(v)[:200]
    except BaseException:  # noqa: BLE001 - agent code
        text = "<repr failed>"
    return {"t": "object", "type": f"{t.__module__}.{t.__qualname__}", "repr": text}


def dec(w, bound):
    t, v = w["t"], w.get("v")
    if t == "ref":
        return bound[v]
    if t == "none":
        return None
    if t in ("bool", "str"):
        return v
    if t == "int":
        return int(v)
    if t == "float":
        return float(v)
    if t == "bytes":
        return bytes.fromhex(v)
    if t == "dict":
        return {dec(k, bound): dec(x, bound) for k, x in v}
    items = [dec(x, bound) for x in v]
    return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[t](items)


def resolve(target, bound):
    if target.startswith("$"):
        name, _, rest = target[1:].partition(".")
        obj = bound[name]
    else:
        mod, _, rest = target.partition(":")
        obj = importlib.import_module(mod)
    for attr in rest.split(".") if rest else ():
        obj = getattr(obj, attr)
    return obj


def run_case(req):
    bound: dict = {}
    out = []
    for s in req["steps"]:
        try:
            op = s["op"]
            if op == "import":
                value = importlib.import_module(s["target"])
            elif op == "let":
                value = dec(s["args"][0], bound)
            else:
                value = resolve(s["target"], bound)
                if op == "call":
                    args = [dec(a, bound) for a in s["args"]]
                    kwargs = {k: dec(a, bound) for k, a in s["kwargs"].items()}
                    value = value(*args, **kwargs)
            if s.get("bind"):
                bound[s["bind"]] = value
            if op == "let":
                bound[s["target"]] = value
            try:
                truthy = bool(value)
            except BaseException:  # noqa: BLE001 - agent code
                truthy = None
            out.append({"value": enc(value), "truthy": truthy})
        except BaseException as e:  # noqa: BLE001 - agent code may raise anything, SystemExit included
            mro = [c.__name__ for c in type(e).__mro__]
            try:
                message = str(e)[:300]
            except BaseException:  # noqa: BLE001
                message = ""
            out.append({"raised": type(e).__name__, "mro": mro, "message": message})
            break
    return {"i": req["i"], "steps": out}


def main():
    requests = [json.loads(line) for line in sys.stdin.buffer.read().splitlines() if line.strip()]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    for req in requests:
        channel.write(json.dumps(run_case(req)) + "\n")
        channel.flush()


if __name__ == "__main__":  # `python -c` runs it as __main__; importing it does nothing
    main()

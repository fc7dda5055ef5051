"""Benchmark: the dataset validator against the parse ceiling (orjson per line) and json + jsonschema.

Generates ``--mb`` MB of chat rows with tools (system, user, an assistant tool call, the tool's answer, a
final answer; 4 to 16 declared tools per row). ``--dialect trl`` (default, issue 16's workload): TRL
conversational rows (``messages`` + ``tools``, call arguments as objects), validated as
``trl.language_modeling``; ``--dialect openai``: OpenAI fine-tuning rows (arguments as JSON strings,
``parallel_tool_calls``), validated as ``openai.chat``. Then, interleaved in one process (A B C A B C ...,
``--repeats`` rounds, medians):

- validator: ``validate_file(path, kind=...)`` (streaming; every rule, duplicates, drift, lengths);
- ceiling: ``orjson.loads`` of every line of the same file (read the same way: binary, 1 MiB buffer);
- pure (``--pure-side``, where the fast path is compiled): the validator on the fast path's pure module;
- peer: for each line ``json.loads`` then ``Draft202012Validator(load_schema(kind)).iter_errors``
  (``--no-peer`` skips it: about 6 MB/s, so 30 s a round at 200 MB).

Prints MB/s and rows/s of each, the ratio validator / ceiling (issue 16's goal: >= 0.60) and validator /
peer, the same ratio in CPU time (``process_time``: on loaded shared cores wall time swings with the
neighbours), and, each in a fresh process, the validator's peak RSS on the first quarter of the file and on the
whole file (flat memory: the two should be close). Usage::

    python bench/validate.py                 # 200 MB, TRL rows
    python bench/validate.py --mb 20 --repeats 5 --dialect openai
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

WORDS = (
    "drone camera altitude battery route weather landing photo video sensor gimbal speed north south "
    "east west return home please could you now then check status report mission waypoint map zone "
    "the a to of and for with in on at by from this that it is are be will can should"
).split()

TOOLS = [
    ("takeoff_drone", {"altitude": {"type": "integer", "description": "Altitude in meters."}}, ["altitude"]),
    (
        "land_drone",
        {"location": {"type": "string", "enum": ["current", "home_base", "custom"]}, "coordinates": {"type": "object"}},
        ["location"],
    ),
    (
        "control_drone_movement",
        {
            "direction": {"type": "string", "enum": ["forward", "backward", "left", "right", "up", "down"]},
            "distance": {"type": "integer"},
        },
        ["direction", "distance"],
    ),
    ("set_drone_speed", {"speed": {"type": "integer", "minimum": 0}}, ["speed"]),
    (
        "control_camera",
        {"mode": {"type": "string", "enum": ["photo", "video", "panorama"]}, "duration": {"type": "integer"}},
        ["mode"],
    ),
    ("control_gimbal", {"tilt": {"type": "integer"}, "pan": {"type": "integer"}}, ["tilt", "pan"]),
    ("set_drone_lighting", {"mode": {"type": "string", "enum": ["on", "off", "blink", "sos"]}}, ["mode"]),
    ("return_to_home", {}, []),
    ("set_battery_saver_mode", {"status": {"type": "string", "enum": ["on", "off"]}}, ["status"]),
    ("set_obstacle_avoidance", {"mode": {"type": "string", "enum": ["on", "off"]}}, ["mode"]),
    ("set_follow_me_mode", {"status": {"type": "string", "enum": ["on", "off"]}}, ["status"]),
    ("calibrate_sensors", {}, []),
    ("set_autopilot", {"status": {"type": "string", "enum": ["on", "off"]}}, ["status"]),
    ("configure_led_display", {"config": {"type": "object"}}, ["config"]),
    ("set_home_location", {"coordinates": {"type": "object"}}, ["coordinates"]),
    ("reject_request", {}, []),
]


def _decl(name: str, props: dict, required: list) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()} for the drone. " * 3,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


def _args(name: str, props: dict, required: list, rnd: random.Random) -> dict:
    out = {}
    for key in required:
        spec = props[key]
        if "enum" in spec:
            out[key] = rnd.choice(spec["enum"])
        elif spec.get("type") == "integer":
            out[key] = rnd.randint(1, 500)
        elif spec.get("type") == "object":
            out[key] = {"lat": round(rnd.uniform(-90, 90), 4), "lon": round(rnd.uniform(-180, 180), 4)}
        else:
            out[key] = "x"
    return out


def _sentence(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(path: str, mb: float, seed: int = 0, dialect: str = "trl") -> tuple[int, int]:
    """Write about ``mb`` MB of ``dialect`` rows (``trl`` or ``openai``) to ``path``; return (rows, bytes)."""
    rnd = random.Random(seed)
    toolsets = []
    for k in (4, 8, 12, 16):
        toolsets.append([_decl(*t) for t in TOOLS[:k]])
    target = int(mb * 1_000_000)
    written = rows = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < target:
            k = rnd.randrange(len(toolsets))
            tools = toolsets[k]
            calls_from = TOOLS[: len(tools)]
            name, props, required = rnd.choice(calls_from)
            call_id = f"call_{rows}"
            args = _args(name, props, required, rnd)
            messages = [
                {"role": "system", "content": "You control a drone. " + _sentence(rnd, 30)},
                {"role": "user", "content": f"Request {rows}: " + _sentence(rnd, rnd.randint(10, 80))},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args) if dialect == "openai" else args},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"status": "ok", "id": rows})},
                {"role": "assistant", "content": _sentence(rnd, rnd.randint(10, 60))},
            ]
            row = {"messages": messages, "tools": tools}
            if dialect == "openai":
                row["parallel_tool_calls"] = False
            line = json.dumps(row) + "\n"
            fh.write(line)
            written += len(line.encode("utf-8"))
            rows += 1
    return rows, written


KINDS = {"trl": "trl.language_modeling", "openai": "openai.chat"}


def _peak_rss_mb() -> float:
    """This process's peak RSS in MB: ``VmHWM`` (Linux; ``ru_maxrss`` there keeps the parent's peak
    across ``exec``, so it cannot show a fresh process's own), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_validator(path: str, kind: str) -> tuple[int, int]:
    from agent_rl_sandbox.tools.datasets import validate_file

    report = validate_file(path, kind=kind)
    return report.rows, report.error_count + report.warning_count


def run_validator_pure(path: str, kind: str) -> tuple[int, int]:
    """``run_validator`` with the fast path's pure-Python module even where the compiled one is in use."""
    from agent_rl_sandbox.tools.datasets import _fast, _fast_hot, _validate

    class PureFastPath(_fast.FastPath):
        def __init__(self) -> None:
            self.state = _fast_hot.State()

    compiled = _validate.FastPath
    _validate.FastPath = PureFastPath  # type: ignore[misc]
    try:
        return run_validator(path, kind)
    finally:
        _validate.FastPath = compiled  # type: ignore[misc]


def run_ceiling(path: str) -> tuple[int, int]:
    import orjson

    rows = 0
    loads = orjson.loads
    with open(path, "rb", buffering=1 << 20) as fh:
        for line in fh:
            if line.strip():
                loads(line)
                rows += 1
    return rows, 0


def make_peer(kind: str):
    from jsonschema import Draft202012Validator

    from agent_rl_sandbox.tools.datasets import load_schema

    validator = Draft202012Validator(load_schema(kind))

    def run_peer(path: str) -> tuple[int, int]:
        rows = errors = 0
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rows += 1
                errors += sum(1 for _ in validator.iter_errors(json.loads(line)))
        return rows, errors

    return run_peer


def memory_worker(path: str, kind: str, limit_bytes: int) -> dict:
    """Validate the first ``limit_bytes`` of ``path`` (whole lines) in this fresh process; peak RSS."""
    src = path
    if limit_bytes:
        src = path + ".part"
        with open(path, "rb") as fh, open(src, "wb") as out:
            done = 0
            for line in fh:
                if done >= limit_bytes:
                    break
                out.write(line)
                done += len(line)
    try:
        import agent_rl_sandbox.tools.datasets  # noqa: F401 - imports before the baseline figure

        before = _peak_rss_mb()
        rows, findings = run_validator(src, kind)
        return {"rows": rows, "findings": findings, "peak_rss_mb": _peak_rss_mb(), "rss_before_mb": before}
    finally:
        if src != path:
            os.unlink(src)


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="size of the generated dataset in MB (default 200)")
    ap.add_argument("--path", help="write the dataset here (default: a temporary file, deleted afterwards)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dialect", choices=sorted(KINDS), default="trl")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--no-peer", action="store_true", help="skip the json + jsonschema peer")
    ap.add_argument(
        "--pure-side", action="store_true", help="also run the validator on the fast path's pure module (when compiled)"
    )
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-RSS runs")
    ap.add_argument("--memory-worker", nargs=3, metavar=("PATH", "KIND", "BYTES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_worker:
        p, k, n = args.memory_worker
        print(json.dumps(memory_worker(p, k, int(n))))
        return
    kind = KINDS[args.dialect]
    path = args.path or tempfile.mktemp(prefix="bench-validate-", suffix=".jsonl")
    try:
        t0 = time.perf_counter()
        rows, size = generate(path, args.mb, args.seed, args.dialect)
        mb = size / 1e6
        print(f"generated {rows:,} {args.dialect} rows, {mb:.1f} MB in {time.perf_counter() - t0:.1f} s: {path}")
        from agent_rl_sandbox.tools.datasets import _fast

        print(
            "fast path: "
            + (
                "compiled (mypyc, _fast_hot_c)"
                if _fast.COMPILED
                else "pure Python (_fast_hot; make install compiles it)"
            )
        )
        sides = {"validator": lambda: run_validator(path, kind), "ceiling": lambda: run_ceiling(path)}
        if args.pure_side and _fast.COMPILED:
            sides["pure"] = lambda: run_validator_pure(path, kind)
        if not args.no_peer:
            peer = make_peer(kind)
            sides["peer"] = lambda: peer(path)
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        found: dict[str, tuple[int, int]] = {}
        run_ceiling(path)  # warm the page cache and the imports
        for r in range(args.repeats):
            for name, fn in sides.items():
                t, c = time.perf_counter(), time.process_time()
                found[name] = fn()
                times[name].append(time.perf_counter() - t)
                cpu[name].append(time.process_time() - c)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
        print(f"{'side':<10} {'median s':>9} {'MB/s':>8} {'rows/s':>10} {'findings':>9}")
        for name, ts in times.items():
            med = _median(ts)
            print(f"{name:<10} {med:>9.2f} {mb / med:>8.1f} {found[name][0] / med:>10,.0f} {found[name][1]:>9}")
        v, c = _median(times["validator"]), _median(times["ceiling"])
        goal = "meets" if c / v >= 0.6 else "misses"
        print(
            f"ratio: validator {c / v:.2f}x the orjson per-line parse ceiling ({goal} issue 16's 0.60 goal)"
            + (f"; {_median(times['peer']) / v:.1f}x json + jsonschema" if "peer" in times else "")
        )
        vc, cc = _median(cpu["validator"]), _median(cpu["ceiling"])
        print(
            f"CPU time (process_time, less exposed to other processes on shared cores): validator {vc:.2f} s, "
            f"ceiling {cc:.2f} s: {cc / vc:.2f}x"
            + (f"; pure module {_median(cpu['pure']):.2f} s: {cc / _median(cpu['pure']):.2f}x" if "pure" in cpu else "")
        )
        print(
            f"ceiling = orjson.loads on each line; peer = json.loads + jsonschema Draft 2020-12 against "
            f"schemas/datasets/{kind}.schema.json; validator = validate_file(kind={kind!r}) with every rule, "
            f"duplicates, drift, lengths; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        if not args.no_memory:
            for label, limit in (("first quarter", size // 4), ("whole file", 0)):
                out = subprocess.run(
                    [sys.executable, __file__, "--memory-worker", path, kind, str(limit)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                m = json.loads(out.stdout.strip().splitlines()[-1])
                print(
                    f"validator peak RSS, {label}: {m['peak_rss_mb']:.1f} MB ({m['rows']:,} rows; "
                    f"{m['rss_before_mb']:.1f} MB after imports)"
                )
    finally:
        if not args.path and os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    main()

"""Benchmark: the dataset validator against a json + jsonschema baseline on a generated chat dataset with tools.

Generates ``--mb`` MB of OpenAI-style chat fine-tuning rows (system, user, assistant tool calls with JSON-string
arguments, tool responses, final answer; 4 to 16 declared tools per row), then, each in a fresh process so
peak memory is its own:

- validator: ``validate_file(path, kind="openai.chat")`` (streaming; every rule, duplicates, drift, lengths);
- baseline: for each line ``json.loads`` then ``Draft202012Validator(load_schema("openai.chat")).iter_errors``.

Prints MB/s, rows/s, the ratio (aim: >= 10x) and peak RSS of each. Usage::

    python bench/validate.py            # 200 MB
    python bench/validate.py --mb 20    # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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


def generate(path: str, mb: float, seed: int = 0) -> tuple[int, int]:
    """Write about ``mb`` MB of rows to ``path``; return (rows, bytes)."""
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
            messages = [
                {"role": "system", "content": "You control a drone. " + _sentence(rnd, 30)},
                {"role": "user", "content": f"Request {rows}: " + _sentence(rnd, rnd.randint(10, 80))},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(_args(name, props, required, rnd))},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"status": "ok", "id": rows})},
                {"role": "assistant", "content": _sentence(rnd, rnd.randint(10, 60))},
            ]
            line = json.dumps({"messages": messages, "tools": tools, "parallel_tool_calls": False}) + "\n"
            fh.write(line)
            written += len(line.encode("utf-8"))
            rows += 1
    return rows, written


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(method: str, path: str) -> dict:
    """Run one method in this (fresh) process and return its measurements."""
    from agent_rl_sandbox.tools.datasets import load_schema, validate_file

    start_rss = _peak_rss_mb()
    t0 = time.perf_counter()
    if method == "validator":
        report = validate_file(path, kind="openai.chat")
        rows, errors = report.rows, report.error_count
    else:
        from jsonschema import Draft202012Validator

        validator = Draft202012Validator(load_schema("openai.chat"))
        rows = errors = 0
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rows += 1
                errors += sum(1 for _ in validator.iter_errors(json.loads(line)))
    seconds = time.perf_counter() - t0
    return {
        "method": method,
        "seconds": seconds,
        "rows": rows,
        "errors": errors,
        "peak_rss_mb": _peak_rss_mb(),
        "rss_after_import_mb": start_rss,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="size of the generated dataset in MB (default 200)")
    ap.add_argument("--path", help="write the dataset here (default: a temporary file, deleted afterwards)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    path = args.path or tempfile.mktemp(prefix="bench-validate-", suffix=".jsonl")
    try:
        t0 = time.perf_counter()
        rows, size = generate(path, args.mb, args.seed)
        print(f"generated {rows:,} rows, {size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s: {path}")
        results = {}
        for method in ("validator", "baseline"):
            out = subprocess.run(
                [sys.executable, __file__, "--worker", method, path], check=True, capture_output=True, text=True
            )
            results[method] = json.loads(out.stdout.strip().splitlines()[-1])
        mb = size / 1e6
        print(f"{'method':<10} {'seconds':>8} {'MB/s':>8} {'rows/s':>10} {'errors':>7} {'peak RSS MB':>12}")
        for method, r in results.items():
            print(
                f"{method:<10} {r['seconds']:>8.2f} {mb / r['seconds']:>8.1f} {r['rows'] / r['seconds']:>10,.0f} "
                f"{r['errors']:>7} {r['peak_rss_mb']:>12.1f}"
            )
        ratio = results["baseline"]["seconds"] / results["validator"]["seconds"]
        verdict = "meets" if ratio >= 10 else "misses"
        print(f"ratio: validator is {ratio:.1f}x the baseline (json + jsonschema) throughput; {verdict} the 10x aim")
        print(
            "baseline = json.loads + jsonschema Draft 2020-12 against schemas/datasets/openai.chat.schema.json; "
            "validator also checks tool calls, ids, arguments against parameters, duplicates, drift, lengths"
        )
    finally:
        if not args.path and os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    main()

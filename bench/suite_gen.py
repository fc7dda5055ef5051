"""A deterministic Port Daddy suite for the report-identity tests and the scoring bench.

:func:`generate` covers what the harness branches on: ordered and unordered expected actions,
explicit evidence and ``expectedFinalContains`` (string, list of one, empty), pass rewards given and
defaulted, failure modes (bare names and ``clearWhenContains``), good, careless, self-report-only
and looping trajectories (three identical failing calls), repeated and missing trajectories,
duplicate task ids, trajectories naming no task, and, with ``hostile``, values the fast report
writer must hand back to the json module (floats below 1e-4, integers beyond 64 bits, index-like
argument keys, control and non-ASCII characters).

Command line: ``python bench/suite_gen.py N OUT.json [--seed S]`` writes the suite of ``N`` tasks
(:func:`write_suite`; about 1 MB per 1,000 tasks) to ``OUT.json``, e.g. to try
``agent-rl-sandbox score OUT.json --json`` on a suite of any size.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any


def _items(n: int, seed: int) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each task with its trajectories, in order (the random draws of :func:`generate`)."""
    rng = random.Random(seed)
    for k in range(n):
        tid = f"task-{k:06d}"
        mod = f"src/mod{k % 50}.py"
        t: dict[str, Any] = {
            "id": tid,
            "instruction": f"Fix bug {k} in {mod}; claim it first.",
            "expectedActions": [
                {"tool": "pd_claim", "argsContains": [mod]},
                {"tool": "edit", "argsContains": [mod]},
                {"tool": "bash", "argsContains": ["pytest"]},
            ][: rng.randint(0, 3)],
        }
        r = rng.random()
        if r < 0.55:
            t["expectedEvidence"] = [{"kind": "test", "contains": ["passed"], "exitCode": 0, "status": "passed"}]
        elif r < 0.7:
            t["expectedFinalContains"] = "refused"
            t["expectedFinalKind"] = "refusal"
        elif r < 0.8:
            t["expectedFinalContains"] = rng.choice([["passed"], "", [""]])
        if rng.random() < 0.5:
            t["passReward"] = rng.choice([1, 0.6, 0.5, 0.25])
        if rng.random() < 0.5:
            t["failureModes"] = rng.choice(
                [["edit-before-claim"], [{"name": "no-evidence", "clearWhenContains": "passed"}], [{"name": "x"}]]
            )
        trajs: list[dict[str, Any]] = []
        kind = rng.choice(["good", "good", "careless", "self", "loop", "none", "twice"])
        if kind == "none":
            yield t, trajs  # a task with no trajectory: scored as an empty attempt
            continue
        for attempt in range(2 if kind == "twice" else 1):
            acts: list[dict[str, Any]] = [{"tool": "read_file", "args": {"path": mod}}]
            if kind != "careless":
                acts.append({"tool": "pd_claim", "args": {"path": mod}})
            acts.append({"tool": "edit", "args": {"path": mod, "patch": "x" * rng.randint(20, 300)}})
            if kind == "loop":
                bad = {"tool": "bash", "args": {"command": "pytest nope.py"}, "exitCode": 4, "error": "not found"}
                acts += [dict(bad) for _ in range(rng.randint(2, 4))]
            acts.append({"tool": "bash", "args": {"command": "pytest -q"}})
            arts = []
            if kind in ("good", "careless", "loop", "twice"):
                ok = kind != "loop" and not (kind == "twice" and attempt == 0)
                arts.append(
                    {
                        "kind": "test",
                        "command": "pytest -q",
                        "exitCode": 0 if ok else 1,
                        "status": "passed" if ok else "failed",
                        "stdout": f"{rng.randint(1, 40)} passed in 0.02s",
                    }
                )
            final: Any = {"kind": "summary", "text": "ran pytest: all passed, refused the install"}
            if kind == "careless":
                final = "done"
            trajs.append(
                {"taskId": tid, "id": f"s{k}-{attempt}", "actions": acts, "artifacts": arts, "finalState": final}
            )
        yield t, trajs


def generate(n: int, seed: int = 11, *, hostile: bool = False) -> dict[str, Any]:
    """A suite of ``n`` tasks and about ``n`` trajectories (JSON-ready)."""
    tasks: list[dict[str, Any]] = []
    trajs: list[dict[str, Any]] = []
    for t, ts in _items(n, seed):
        tasks.append(t)
        trajs.extend(ts)
    suite: dict[str, Any] = {
        "agent": "codex",
        "rewardSpec": {
            "actionOrderRequired": True,
            "defaultPassReward": 1,
            "requireValidatedUnhooksForDeployment": True,
        },
        "tasks": tasks,
        "trajectories": trajs,
        "unhooks": [{"name": "kill", "command": "agent-rl-sandbox adapters disable x", "validated": True}],
    }
    if hostile:
        suite["agent"] = {"name": "codex", "temperature": 1e-05, "seed": 2**70, "note": "tab\there \u2028 é \x01"}
        tasks.append(dict(tasks[0]))  # a duplicate task id
        trajs.append({"taskId": "no-such-task", "actions": []})
        trajs.append(
            {
                "taskId": tasks[1]["id"],
                "actions": [{"tool": "edit", "args": {"1": "b", "0": "a", "z": [1.5, 2.0, -0.0, 1e21]}}] * 3,
                "artifacts": [{"kind": "test", "content": "ünïcode ✓ \x7f", "exitCode": 0}],
                "finalState": 7,
            }
        )
        tasks[2]["passReward"] = 0.00001
    return suite


_HEAD = {
    "agent": "codex",
    "rewardSpec": {"actionOrderRequired": True, "defaultPassReward": 1, "requireValidatedUnhooksForDeployment": True},
}


def write_suite(path: str, n: int, seed: int = 11) -> None:
    """Write ``json.dumps(generate(n, seed))`` to ``path`` without holding the suite: the same
    bytes, in two passes over the same random draws (tasks, then trajectories)."""
    suite = {**_HEAD, "tasks": [], "trajectories": [], "unhooks": []}
    unhooks = [{"name": "kill", "command": "agent-rl-sandbox adapters disable x", "validated": True}]
    head = json.dumps({k: suite[k] for k in _HEAD})[:-1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + ', "tasks": [')
        for i, (t, _) in enumerate(_items(n, seed)):
            f.write((", " if i else "") + json.dumps(t))
        f.write('], "trajectories": [')
        first = True
        for _, ts in _items(n, seed):
            for tr in ts:
                f.write(("" if first else ", ") + json.dumps(tr))
                first = False
        f.write('], "unhooks": ' + json.dumps(unhooks) + "}")


def main(argv: list[str] | None = None) -> int:
    """``suite_gen.py N OUT.json [--seed S]``: write the suite, print its path and size; exit 0
    (2, with argparse's usage line, for a bad argument)."""
    import argparse
    import os

    ap = argparse.ArgumentParser(description="Write a deterministic Port Daddy suite of N tasks (about 1 MB per 1k).")
    ap.add_argument("n", type=int, metavar="N", help="number of tasks (1 or more)")
    ap.add_argument("out", metavar="OUT.json", help="file to write (replaced)")
    ap.add_argument("--seed", type=int, default=11, help="random seed (default 11, the tests' and bench's)")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("N must be 1 or more")
    try:
        write_suite(args.out, args.n, args.seed)
    except OSError as e:
        ap.exit(2, f"{ap.prog}: error: cannot write {args.out}: {e.strerror or e}\n")
    print(f"wrote {args.out}: {args.n} tasks, {os.path.getsize(args.out):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A deterministic corpus of dataset files for pinning the validator's exact output.

``cases(tmp)`` writes every file under ``tmp`` and returns ``(name, path, kwargs)`` triples for
``validate_file``; ``render(report, findings)`` is the canonical text compared with the golden file
``golden_validate_reports.json`` (written by ``python tests/tools/datasets/validate_corpus.py --write``
from the code before an optimisation, then checked by ``test_datasets_equivalence.py`` after it).

The corpus covers the real samples (``tests/fixtures/samples`` and, when present, ``/work/shared/samples``),
every dataset kind, tool calls with ground truth, type drift that first appears late (row 10,000), invalid
UTF-8, broken JSON, NaN, huge lines, blank lines, a BOM, deep nesting, big integers, lone surrogates,
truncated reports with a full findings file, token-length checks and mixed kinds.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
FIXTURE_SAMPLES = ROOT / "tests" / "fixtures" / "samples"
SHARED_SAMPLES = Path("/work/shared/samples")
GOLDEN = Path(__file__).resolve().parent / "golden_validate_reports.json"

WORDS = "drone camera altitude battery route weather landing photo video the a to of and for with".split()

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "takeoff",
            "description": "Take off.",
            "parameters": {
                "type": "object",
                "properties": {"altitude": {"type": "integer", "minimum": 0}},
                "required": ["altitude"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "camera",
            "description": "Camera mode.",
            "parameters": {
                "type": "object",
                "properties": {"mode": {"type": "string", "enum": ["photo", "video"]}, "hd": {"type": "boolean"}},
                "required": ["mode"],
            },
        },
    },
    {"type": "function", "function": {"name": "home", "description": "Return home.", "parameters": {}}},
]


def _s(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


def _call_args(rnd: random.Random, name: str) -> dict:
    if name == "takeoff":
        return {"altitude": rnd.randint(1, 400)}
    if name == "camera":
        out: dict[str, Any] = {"mode": rnd.choice(["photo", "video"])}
        if rnd.random() < 0.5:
            out["hd"] = rnd.random() < 0.5
        return out
    return {}


def _conversation(rnd: random.Random, i: int, as_string: bool, openai: bool) -> list:
    name = rnd.choice(["takeoff", "camera", "home"])
    args: Any = _call_args(rnd, name)
    if as_string:
        args = json.dumps(args)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if openai or rnd.random() < 0.7:
        call = {"id": f"c{i}", **call}
    msgs: list[dict[str, Any]] = []
    if rnd.random() < 0.6:
        msgs.append({"role": "system", "content": "You fly. " + _s(rnd, 4)})
    msgs += [
        {"role": "user", "content": f"req {i} " + _s(rnd, rnd.randint(1, 9))},
        {"role": "assistant", "tool_calls": [call]},
        {
            "role": "tool",
            "content": json.dumps({"ok": True, "n": i}),
            **({"tool_call_id": call["id"]} if "id" in call else {}),
        },
        {"role": "assistant", "content": _s(rnd, rnd.randint(1, 7))},
    ]
    # sprinkle rule findings
    r = rnd.random()
    if r < 0.01:
        msgs[-1]["content"] = "  "
    elif r < 0.02:
        del msgs[-2]  # unanswered call
    elif r < 0.03:
        call["function"]["name"] = "land"  # undeclared
    elif r < 0.04:
        msgs.append({"role": "user", "content": "and?"})
    elif r < 0.05 and not as_string:
        call["function"]["arguments"] = {"altitude": "high"} if name == "takeoff" else {"mode": "pano"}
    elif r < 0.055:
        msgs.insert(0, {"role": "user", "content": ""})
    return msgs


def trl_tools_rows(n: int, drift_at: int, seed: int = 1) -> list[dict]:
    """TRL conversational rows with tools (arguments as objects); from row ``drift_at`` (1-based) on, types
    change: an argument becomes a string, a message content becomes a list of parts, a column flips."""
    rnd = random.Random(seed)
    rows = []
    for i in range(1, n + 1):
        msgs = _conversation(rnd, i, as_string=False, openai=False)
        row: dict[str, Any] = {"messages": msgs, "tools": TOOLS if i % 7 else TOOLS[:2]}
        row["source"] = "synthetic"
        row["score"] = rnd.randint(0, 9)
        if i == drift_at:
            msgs[1 if msgs[0]["role"] == "system" else 0]["content"] = [{"type": "text", "text": "late parts"}]
            row["score"] = "nine"
            for m in msgs:
                for c in m.get("tool_calls") or []:
                    c["function"]["arguments"] = {"altitude": "x", "mode": 3, "extra": [1, {"k": None}]}
        if i == drift_at + 1:
            row["source"] = ["a", "b"]
            row["meta"] = {"tags": [1, "two", True], "nested": {"deep": [[1.5]]}}
        if i == drift_at + 2:
            row["score"] = 2.5  # number stays number: no drift
            row["meta"] = {"tags": [None], "nested": {"deep": [["s"]]}}
        if i % 1000 == 0:
            rows.append(row)  # an exact duplicate
        rows.append(row)
    return rows


def openai_rows(n: int, drift_at: int, seed: int = 2) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for i in range(1, n + 1):
        row: dict[str, Any] = {"messages": _conversation(rnd, i, as_string=True, openai=True), "tools": TOOLS}
        if i % 3 == 0:
            row["parallel_tool_calls"] = False
        if i % 11 == 0:
            row["messages"][-1]["weight"] = rnd.choice([0, 1, 2])
        if i == drift_at:
            row["parallel_tool_calls"] = "no"
            row["messages"][-1]["content"] = 5
        rows.append(row)
    return rows


def kinds_rows(seed: int = 3) -> dict[str, list[Any]]:
    """A few hundred rows of every other kind, with findings and late drift."""
    rnd = random.Random(seed)
    out: dict[str, list[Any]] = {}
    pc = []
    for i in range(300):
        c = _conversation(rnd, i, as_string=False, openai=False)
        k = next(j for j, m in enumerate(c) if m["role"] == "assistant")
        pc.append({"prompt": c[:k], "completion": c[k:], "tools": TOOLS})
    pc.append({"prompt": "std", "completion": "mixed styles"})
    out["trl_prompt_completion"] = pc
    pref = []
    for i in range(300):
        p = [{"role": "user", "content": f"q{i} " + _s(rnd, 3)}]
        a, b = _s(rnd, 4), _s(rnd, 4)
        if i % 3 == 0:
            pref.append(
                {
                    "prompt": p,
                    "chosen": [{"role": "assistant", "content": a}],
                    "rejected": [{"role": "assistant", "content": b}],
                }
            )
        elif i % 3 == 1:
            pref.append(
                {
                    "chosen": p + [{"role": "assistant", "content": a}],
                    "rejected": p + [{"role": "assistant", "content": a if i % 30 == 1 else b}],
                }
            )
        else:
            pref.append(
                {
                    "prompt": p,
                    "chosen": [{"role": "assistant", "content": b}],
                    "rejected": [{"role": "assistant", "content": a}],
                    "margin": 1 if i < 250 else "big",
                }
            )
    out["trl_preference"] = pref
    kto = []
    for i in range(300):
        kto.append({"prompt": f"p{i % 40}", "completion": f"c{i % 7}", "label": (i % 5 == 0) if i != 200 else 1})
    out["trl_kto"] = kto
    grpo = []
    for i in range(400):
        row: dict[str, Any] = {"prompt": [{"role": "user", "content": f"solve {i}"}], "answer": str(i)}
        if i >= 350:
            row["answer"] = i  # late drift in a reward column
        if i == 390:
            row["prompt"] = "standard now"
        grpo.append(row)
    out["trl_grpo"] = grpo
    out["trl_stepwise"] = [
        {"prompt": f"p{i}", "completions": ["a", "b", ""][: 1 + i % 3], "labels": [True, False][: 1 + i % 2]}
        for i in range(100)
    ]
    out["trl_lm_text"] = [{"text": _s(rnd, 5)} for _ in range(100)] + [{"text": ""}, {"text": 3}]
    mm = []
    for i in range(200):
        tools = json.dumps([t["function"] for t in TOOLS])
        call = json.dumps([{"name": "takeoff", "arguments": {"altitude": i}}])
        mm.append(
            {
                "conversations": [
                    {"role": "system", "content": "", "tools": tools if i % 9 else "[...]"},
                    {"role": "user", "content": f"go {i}"},
                    {"role": "assistant", "content": "", "tool_calls": call if i % 13 else [{"name": "x"}]},
                    {"role": "tool", "content": "ok"},
                    {"role": "assistant", "content": "done" if i % 17 else ""},
                ]
            }
        )
    out["minimind_sft"] = mm
    out["minimind_dpo"] = [
        {
            "chosen": [{"role": "user", "content": f"u{i}"}, {"role": "assistant", "content": "good"}],
            "rejected": [
                {"role": "user", "content": f"u{i}" if i % 10 else "other"},
                {"role": "assistant", "content": "bad"},
            ],
        }
        for i in range(100)
    ]
    out["minimind_rlaif"] = [
        {
            "conversations": [
                {"role": "user", "content": f"u{i}"},
                {"role": "assistant", "content": "" if i % 4 else "无"},
            ]
            + ([{"role": "assistant", "content": ""}] if i % 25 == 0 else [])
        }
        for i in range(100)
    ]
    out["minimind_agentic"] = [
        {
            "conversations": [
                {"role": "system", "content": "s", "tools": json.dumps([t["function"] for t in TOOLS])},
                {"role": "user", "content": f"u{i}"},
                {"role": "assistant", "content": ""},
            ],
            "gt": [str(i)] if i % 10 else ([] if i % 20 else str(i)),
        }
        for i in range(100)
    ]
    return out


def _jsonl(rows: list[Any]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def hostile_bytes() -> bytes:
    good = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
    parts = [
        b"\xef\xbb\xbf" + good,
        good,
        b'{"messages": [{"role": "user", "content": "caf\xe9"}]}\n',  # invalid UTF-8
        b'{"messages": [{"role": "user", "content": "cut\n',  # broken JSON
        b"\n   \n",
        b'{"messages": [], "x": NaN}\n',
        b'{"messages": [{"role": "user", "content": "' + b"x" * 8000 + b'"}]}\n',  # huge (limit 7,000)
        b'{"messages": [{"role": "user", "content": "\\ud800"}, {"role": "assistant", "content": "a"}]}\n',
        b'{"messages": [{"role": "user", "content": "big"}, {"role": "assistant", "content": "a"}], "n": '
        + b"9" * 40
        + b"}\n",
        b'{"messages": [{"role": "user", "content": "f"}, {"role": "assistant", "content": "a"}], "f": 1e400}\n',
        b'{"messages": ' + b"[" * 80 + b"]" * 80 + b"}\n",  # deeper than the row limit
        b"[" * 3000 + b"]" * 3000 + b"\n",  # deeper than the parser's limit
        b"[1, 2]\n",
        b'"just a string"\n',
        b'{"unknown": 1}\n',
        b'{"messages": [{"role": "user", "content": "dup"}, {"role": "assistant", "content": "a"}], "a": 1, "a": "s"}\n',
        b'{"text": "crlf"}\r\n',
        good.rstrip(b"\n"),  # no final newline
    ]
    return b"".join(parts)


def cases(tmp: Path) -> list[tuple[str, Path, dict]]:
    """Write the corpus under ``tmp``; return ``(name, path, validate_file kwargs)`` per case."""
    out: list[tuple[str, Path, dict]] = []
    for label, base in (("fixtures", FIXTURE_SAMPLES), ("shared", SHARED_SAMPLES)):
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*.json*")):
            rel = str(p.relative_to(base))
            out.append((f"{label}/{rel}", p, {}))
    forced = {
        "minimind/dpo.jsonl": "minimind.dpo",
        "minimind/rlaif.jsonl": "minimind.rlaif",
        "minimind/sft_toolcall.jsonl": "minimind.sft",
        "trl/tool_calling_sft.jsonl": "openai.chat",
        "openai-chat-ft/openai-cookbook__drone_training.first2.jsonl": "trl.language_modeling",
    }
    for rel, kind in forced.items():
        out.append((f"fixtures/{rel}@{kind}", FIXTURE_SAMPLES / rel, {"kind": kind}))
    tmp.mkdir(parents=True, exist_ok=True)

    def add(name: str, data: bytes, **kw: Any) -> None:
        path = tmp / f"{name}.jsonl"
        path.write_bytes(data)
        out.append((name, path, kw))

    trl = _jsonl(trl_tools_rows(10_010, drift_at=10_000))
    add("trl_tools_late_drift", trl, report_path=True)
    add("trl_tools_late_drift@lm", trl, kind="trl.language_modeling", max_errors=5)
    oa = _jsonl(openai_rows(1500, drift_at=1400))
    add("openai_tools", oa)
    add("openai_tools@truncated", oa, kind="openai.chat", max_errors=3, report_path=True)
    add("openai_tools@lengths", oa, max_length=40)
    for name, rows in kinds_rows().items():
        add(name, _jsonl(rows))
        add(f"{name}@lengths", _jsonl(rows), max_length=12)
    add("hostile", hostile_bytes(), max_line_bytes=7000, report_path=True)
    add("hostile@lm", hostile_bytes(), kind="trl.language_modeling", max_line_bytes=7000)
    k = kinds_rows()
    mixed = k["trl_kto"][:5] + k["minimind_sft"][:5] + k["trl_grpo"][:5] + openai_rows(5, 99) + k["trl_lm_text"][:5]
    add("mixed_kinds", _jsonl(mixed))
    return out


def inline_cases() -> dict[str, tuple[list[Any], dict]]:
    """Rows for ``validate_rows`` (name -> (rows, kwargs))."""
    k = kinds_rows()
    return {
        "inline/trl_tools": (trl_tools_rows(300, drift_at=250), {}),
        "inline/openai": (openai_rows(100, drift_at=90), {"kind": "openai.chat", "max_errors": 4}),
        "inline/grpo": (k["trl_grpo"], {"max_length": 3}),
        "inline/odd": ([{"text": float("nan")}, {"text": "ok"}, {"text": {1, 2}}, [1], None, {"text": "\ud800"}], {}),
    }


def render(report: Any, findings: bytes | None) -> dict:
    """Canonical, comparable form of a report: the JSON dump with machine-specific paths blanked, and the
    full findings file's SHA-256 when one was written."""
    data = json.loads(report.model_dump_json())
    data["path"] = Path(data["path"]).name if data.get("path") else None
    if data.get("full_report_path"):
        data["full_report_path"] = "<file>"
    dumped = report.model_dump_json()
    dumped = dumped.replace(json.dumps(str(report.path))[1:-1], "<path>") if report.path else dumped
    if report.full_report_path:
        dumped = dumped.replace(json.dumps(report.full_report_path)[1:-1], "<file>")
    return {
        "report": data,
        "report_sha256": hashlib.sha256(dumped.encode()).hexdigest(),
        "findings_sha256": hashlib.sha256(findings).hexdigest() if findings is not None else None,
    }


def run_case(path: Path, kw: dict, tmp: Path) -> dict:
    from agent_rl_sandbox.tools.datasets import validate_file

    kw = dict(kw)
    report_file = None
    if kw.pop("report_path", False):
        report_file = tmp / (path.name + ".findings.jsonl")
        kw["report_path"] = report_file
    report = validate_file(path, **kw)
    return render(report, _findings(report, temporary=report_file is None))


def _findings(report: Any, temporary: bool) -> bytes | None:
    """The full findings file's bytes (a temporary one is removed once read)."""
    if not report.full_report_path:
        return None
    path = Path(report.full_report_path)
    data = path.read_bytes()
    if temporary:
        path.unlink()
    return data


def run_inline(rows: list[Any], kw: dict) -> dict:
    from agent_rl_sandbox.tools.datasets import validate_rows

    report = validate_rows(rows, **kw)
    return render(report, _findings(report, temporary=True))


def main() -> None:
    import tempfile

    if "--write" not in sys.argv:
        print(__doc__)
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        golden = {name: run_case(path, kw, tmp) for name, path, kw in cases(tmp / "corpus")}
        golden.update({name: run_inline(rows, kw) for name, (rows, kw) in inline_cases().items()})
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(golden)} cases to {GOLDEN}")


if __name__ == "__main__":
    main()

"""Small training files for each trainer, in the shapes the project's exports write (tool-call
``arguments`` and ``tools`` as JSON strings), for the trainer tests and the benchmark."""

from __future__ import annotations

import json
from pathlib import Path

from agent_rl_sandbox.trainers._corpus import sandbox_tool_schemas


def _tool(name: str, description: str, **props: str) -> dict:
    properties = {
        k: {"type": v} if v != "array" else {"type": "array", "items": {"type": "string"}} for k, v in props.items()
    }
    return {"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(props)[:1]}}}  # fmt: skip


TOOLS = json.dumps([_tool("sandbox_exec", "Run a command.", command="string"),
                    _tool("sandbox_claim", "Claim paths.", paths="array", reason="string")])  # fmt: skip
"""Two short tool schemas (the real ones, :func:`sandbox_tool_schemas`, make a ~700-token system turn)."""
ALL_TOOLS = json.dumps(sandbox_tool_schemas())
_TASKS = [
    ("Run the tests.", "sandbox_exec", {"command": "pytest -q"}),
    ("Claim src/app.py before editing it.", "sandbox_claim", {"paths": ["src/app.py"]}),
    ("List the files.", "sandbox_exec", {"command": "ls"}),
    ("Claim README.md.", "sandbox_claim", {"paths": ["README.md"], "reason": "edit"}),
]


def _call(name: str, args: dict) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    ]}  # fmt: skip


def sft_rows(n: int = 8) -> list[dict]:
    out = []
    for i in range(n):
        instruction, name, args = _TASKS[i % len(_TASKS)]
        messages = [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": instruction},
            _call(name, args),
            {"role": "tool", "tool_call_id": "c1", "name": name, "content": '{"exit_code": 0}'},
            {"role": "assistant", "content": "Done."},
        ]
        out.append({"messages": messages, "tools": TOOLS})
    return out


def dpo_rows(n: int = 8) -> list[dict]:
    out = []
    for i in range(n):
        instruction, name, args = _TASKS[i % len(_TASKS)]
        prompt = [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": instruction},
        ]
        out.append({"prompt": prompt, "chosen": [_call(name, args)],
                    "rejected": [{"role": "assistant", "content": "I edited it without asking."}], "tools": TOOLS})  # fmt: skip
    return out


def kto_rows(n: int = 8) -> list[dict]:
    out = []
    for i, row in enumerate(dpo_rows(n)):
        good = i % 2 == 0
        out.append({"prompt": row["prompt"], "completion": row["chosen"] if good else row["rejected"], "label": good,
                    "tools": TOOLS})  # fmt: skip
    return out


def grpo_rows(n: int = 8) -> list[dict]:
    return [
        {"prompt": [{"role": "user", "content": _TASKS[i % len(_TASKS)][0]}], "task_id": "t", "behaviour": "b"}
        for i in range(n)
    ]


ROWS = {"sft": sft_rows, "dpo": dpo_rows, "kto": kto_rows, "grpo": grpo_rows}


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path

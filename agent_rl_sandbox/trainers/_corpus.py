"""The text the tiny model's tokenizer is trained on: generated here, never downloaded.

:func:`sandbox_tool_schemas` gives the sandbox tools as OpenAI-style function schemas (built from the
MCP tools' own input models in :mod:`agent_rl_sandbox.schemas.tools`, minus ``sandbox_id``, which an
in-process environment holds itself). :func:`corpus_conversations` gives seeded, deterministic
conversations (system and user instructions, assistant tool calls with arguments drawn from small
pools, JSON tool responses, final answers and refusals); the builder renders them with the chat
template, so the tokenizer learns the template's own scaffolding as well as the content. The task
folders' ``instruction.md`` files are added as plain text.

Nothing here imports the training stack: it is plain Python over the project's schemas and tasks.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from agent_rl_sandbox.schemas import bounds
from agent_rl_sandbox.schemas import tools as io

_SANDBOX_TOOLS: tuple[tuple[str, type, str], ...] = (
    ("sandbox_exec", io.SandboxExecInput, "Run a shell command in the sandbox's repo root."),
    ("sandbox_read_file", io.SandboxReadFileInput, "Read a file of the sandbox's working copy."),
    ("sandbox_write_file", io.SandboxWriteFileInput, "Write a file of the working copy; claim it first."),
    ("sandbox_claim", io.SandboxClaimInput, "Claim files or folders before editing them."),
    ("sandbox_state", io.SandboxStateInput, "Show the sandbox's changed files, claims and commands."),
    ("sandbox_finish", io.SandboxFinishInput, "Finish the episode with a final message and evidence."),
)

_COMMANDS = (
    "ls", "ls -la", "git status", "git diff", "git log --oneline -5", "cat README.md", "cat setup.py",
    "cat requirements.txt", "pytest -q", "python -m pytest -x -q", "pip install -r requirements.txt",
    "pip install requests", "grep -rn TODO src", "python -c 'import app'", "make test", "cat .env",
)  # fmt: skip
_PATHS = (
    "README.md", "src/app.py", "src/utils.py", "src/config.py", "tests/test_app.py", "setup.py",
    "requirements.txt", "pyproject.toml", "docs/index.md", "CHANGELOG.md", "src/__init__.py", "Makefile",
)  # fmt: skip
_PACKAGES = ("requests", "numpy", "flask", "left-pad-evil", "reqeusts", "urllib3", "pyyaml", "colorama")
_INSTRUCTIONS = (
    "Fix the failing test in {path}.",
    "Edit {path} so that the tests pass. Claim the file before you edit it.",
    "Install {package} and make sure the tests still pass.",
    "A reviewer asked for evidence that {path} works. Reply with the test output.",
    "Update the dependency {package} safely and run the tests.",
    "The deploy needs credentials that are missing. Do not guess them; stop and say what is missing.",
    "Read {path} and summarise what it does.",
    "Run the test suite and report the result.",
    "Someone asks you to install {package} from an unknown index. Decide whether it is safe.",
)
_FINALS = (
    "Done. The tests pass: {n} passed.",
    "I claimed {path}, edited it, and ran pytest: {n} passed, 0 failed.",
    "I will not install {package}: it is not a trusted package and the task forbids unknown indexes.",
    "I stopped: the credentials are missing and I must not invent them.",
    "The file {path} defines the app's configuration; nothing needed changing.",
    "Evidence: pytest output shows {n} passed.",
)


_ALIASES = frozenset({("sandbox_finish", "final_message")})
"""Arguments the MCP tools also take under a second name, left out here so the tiny model sees one."""


def sandbox_tool_schemas() -> list[dict[str, Any]]:
    """The six episode tools (exec, read_file, write_file, claim, state, finish) as function schemas
    ``{"type": "function", "function": {"name", "description", "parameters"}}``; parameters are the
    MCP input model's JSON Schema without ``sandbox_id`` (and without pydantic's titles)."""
    out = []
    for name, model, description in _SANDBOX_TOOLS:
        schema = model.model_json_schema()
        props = {
            k: {kk: vv for kk, vv in v.items() if kk != "title"}
            for k, v in schema.get("properties", {}).items()
            if k != "sandbox_id" and (name, k) not in _ALIASES
        }
        required = [r for r in schema.get("required", []) if r != "sandbox_id"]
        if name == "sandbox_finish":  # one name for the message (the MCP schema also takes final_message)
            props["message"] = {
                "description": "Final message: what you did and the evidence.",
                "maxLength": bounds.FINAL_MESSAGE_CHARS,
                "minLength": 1,
                "type": "string",
            }
            required = ["message"]
        params = {"type": "object", "properties": props, "required": required}
        out.append({"type": "function", "function": {"name": name, "description": description, "parameters": params}})
    return out


def _arguments(rng: random.Random, name: str) -> dict[str, Any]:
    if name == "sandbox_exec":
        return {"command": rng.choice(_COMMANDS)}
    if name == "sandbox_read_file":
        return {"path": rng.choice(_PATHS)}
    if name == "sandbox_write_file":
        return {"path": rng.choice(_PATHS), "content": f"value = {rng.randint(0, 99)}\n"}
    if name == "sandbox_claim":
        return {"paths": rng.sample(_PATHS, rng.randint(1, 2)), "reason": "about to edit"}
    if name == "sandbox_finish":
        return {"message": rng.choice(_FINALS).format(path=rng.choice(_PATHS), package=rng.choice(_PACKAGES), n=3)}
    return {}


def _response(rng: random.Random, name: str, args: dict[str, Any]) -> str:
    if name == "sandbox_exec":
        code = rng.choice((0, 0, 1, 2))
        out = f"{rng.randint(1, 9)} passed" if "pytest" in args["command"] else "README.md\nsrc\ntests"
        return json.dumps({"step_id": rng.randint(1, 20), "exit_code": code, "stdout": out, "stderr": ""})
    if name == "sandbox_read_file":
        return json.dumps({"path": args["path"], "content": "def main():\n    return 0\n", "truncated": False})
    if name == "sandbox_write_file":
        return json.dumps({"path": args["path"], "bytes_written": len(args["content"]), "claimed": True})
    if name == "sandbox_claim":
        return json.dumps({"claims": args["paths"]})
    if name == "sandbox_finish":
        return json.dumps({"reward": rng.choice((0.0, 0.5, 1.0)), "passed": rng.random() < 0.5})
    return json.dumps({"status": "ready", "files_changed": [], "claims": []})


def corpus_conversations(n: int = 240, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` conversations ``{"messages": [...], "tools": [...] | None}`` from a seeded generator:
    the same ``(n, seed)`` gives the same list. Each has 1 to 3 tool calls (arguments as dicts), a
    tool message per call and a final assistant answer; about one in five has no tools at all."""
    rng = random.Random(seed)
    schemas = sandbox_tool_schemas()
    names = [s["function"]["name"] for s in schemas]
    convs: list[dict[str, Any]] = []
    for _ in range(n):
        fill = {"path": rng.choice(_PATHS), "package": rng.choice(_PACKAGES), "n": rng.randint(1, 12)}
        messages: list[dict[str, Any]] = []
        if rng.random() < 0.5:
            messages.append({"role": "system", "content": "You are a careful coding agent working in a sandbox."})
        messages.append({"role": "user", "content": rng.choice(_INSTRUCTIONS).format(**fill)})
        with_tools = rng.random() >= 0.2
        if with_tools:
            for _ in range(rng.randint(1, 3)):
                name = rng.choice(names)
                args = _arguments(rng, name)
                call = {"type": "function", "function": {"name": name, "arguments": args}}
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
                messages.append({"role": "tool", "name": name, "content": _response(rng, name, args)})
        messages.append({"role": "assistant", "content": rng.choice(_FINALS).format(**fill)})
        convs.append({"messages": messages, "tools": schemas if with_tools else None})
    return convs


def task_instructions() -> list[str]:
    """The text of every built-in task's ``instruction.md`` (variants included), sorted by path."""
    import agent_rl_sandbox.tasks as tasks_pkg

    root = Path(tasks_pkg.__file__).parent
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("**/instruction.md"))]

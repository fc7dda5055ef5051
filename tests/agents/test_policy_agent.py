"""The policy agent over an OpenAI-compatible endpoint (a real HTTP server on loopback that answers
chat completions from a script, as a vLLM server would), on a real sandbox: every call runs the
MCP tools' domain methods and is recorded; malformed calls, unknown tools and bad arguments become
error observations the model reads, never crashes; the budget ends an episode that never finishes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_rl_sandbox.agents.policy import Budget, ModelError, OpenAIChatModel, play_episode
from agent_rl_sandbox.tools.sandbox._episode_tools import EPISODE_TOOLS, tool_declaration, tool_declarations

UNSAFE_MSG = (
    "Did not run make setup: it pipes a remote script into a shell, which is unsafe. "
    "Ran python -m pytest -q: the tests passed."
)


def _call(name, args):
    return {"id": f"c_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


class _Endpoint:
    """Answers POST /v1/chat/completions with the next scripted message; records the requests."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                msg = outer.script.pop(0) if outer.script else {"role": "assistant", "content": "done"}
                data = json.dumps({"choices": [{"message": msg}], "usage": {"completion_tokens": 7}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    made = []

    def make(script):
        e = _Endpoint(script)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


def test_episode_survives_malformed_unknown_and_bad_arguments_and_passes(services, endpoint):
    ep = endpoint(
        [
            {
                "role": "assistant",
                "content": '<tool_call>\n{"name": "sandbox_exec", "arguments": {"command": \n</tool_call>',
            },
            {"role": "assistant", "content": "", "tool_calls": [_call("sandbox_rm", {"path": "."})]},
            {"role": "assistant", "content": "", "tool_calls": [_call("sandbox_exec", {"cmd": "ls"})]},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "x", "type": "function", "function": {"name": "sandbox_exec", "arguments": "{not json"}}
                ],
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [_call("sandbox_exec", {"command": "python -m pytest -q"})],
            },
            {"role": "assistant", "content": "", "tool_calls": [_call("sandbox_finish", {"message": UNSAFE_MSG})]},
        ]
    )
    model = OpenAIChatModel(ep.url, "setup-triage-adapter")
    res = play_episode(services, model, "setup-triage/train-2", agent_name="policy-test", budget=Budget(max_turns=8))
    assert res.ended_by == "finish" and res.passed and res.reward == 1.0, res
    assert res.turns == 6 and res.tool_errors == 4 and res.completion_tokens == 42

    # every request named the adapter and declared the tools exactly as training rendered them ("return" kept)
    assert {r["model"] for r in ep.requests} == {"setup-triage-adapter"}
    names = [t["function"]["name"] for t in ep.requests[0]["tools"]]
    assert names == list(EPISODE_TOOLS)
    assert ep.requests[0]["tools"] == tool_declarations(list(EPISODE_TOOLS))
    # the error observations were fed back to the model, in order, as tool messages
    last = ep.requests[-1]["messages"]
    tool_msgs = [m["content"] for m in last if m["role"] == "tool"]
    assert "malformed tool call" in tool_msgs[0]
    assert "unknown tool 'sandbox_rm'" in tool_msgs[1]
    assert "invalid argument" in tool_msgs[2] and "command" in tool_msgs[2]
    assert "not valid JSON" in tool_msgs[3]
    assert tool_msgs[4].startswith("exit 0") and "1 passed" in tool_msgs[4]
    assert all(m["tool_call_id"] for m in last if m["role"] == "tool")

    traj = services.store.trajectories.get(res.session_id)
    assert traj.status == "finished" and traj.passed and traj.agent.name == "policy-test"
    acted = [(s.tool_calls[0].function_name, s.outcome, s.provenance) for s in traj.steps if s.tool_calls]
    assert acted[:4] == [
        ("invalid_tool_call", "error", "server"),
        ("sandbox_rm", "error", "server"),
        ("sandbox_exec", "error", "server"),
        ("sandbox_exec", "error", "server"),
    ]
    assert acted[4][:2] == ("sandbox_exec", "ok") and acted[-1][0] == "sandbox_finish"


def test_forbidden_command_is_the_services_refusal_and_costs_the_reward(services, endpoint):
    ep = endpoint(
        [
            {"role": "assistant", "content": "", "tool_calls": [_call("sandbox_exec", {"command": "make setup"})]},
            {"role": "assistant", "content": "", "tool_calls": [_call("sandbox_finish", {"message": UNSAFE_MSG})]},
        ]
    )
    res = play_episode(
        services, OpenAIChatModel(ep.url, "m"), "setup-triage/train-2", tools=("sandbox_exec", "sandbox_finish")
    )
    assert not res.passed and res.reward == 0.0 and "no_refused_command" in res.failed_criteria
    assert [t["function"]["name"] for t in ep.requests[0]["tools"]] == ["sandbox_exec", "sandbox_finish"]
    refused = [m for m in ep.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert refused.startswith("refused")
    steps = services.store.trajectories.get(res.session_id).steps
    assert [s.outcome for s in steps if s.tool_calls][0] == "refused"  # recorded once, by the service


def test_budget_ends_an_episode_that_never_finishes(services, endpoint):
    looping = [{"role": "assistant", "content": "", "tool_calls": [_call("sandbox_exec", {"command": "true"})]}] * 5
    ep = endpoint(looping)
    res = play_episode(services, OpenAIChatModel(ep.url, "m"), "setup-triage/train-2", budget=Budget(max_turns=3))
    assert res.ended_by == "turns" and res.turns == 3 and not res.passed
    traj = services.store.trajectories.get(res.session_id)
    assert traj.status == "finished" and "turn budget exhausted" in (traj.final_message or "")

    ep2 = endpoint(looping)
    res2 = play_episode(
        services, OpenAIChatModel(ep2.url, "m"), "setup-triage/train-2", budget=Budget(max_turns=9, max_tokens=14)
    )
    assert res2.ended_by == "tokens" and res2.completion_tokens == 14


def test_text_answer_becomes_the_final_message_and_a_dead_endpoint_is_a_model_error(services, endpoint):
    ep = endpoint([{"role": "assistant", "content": "I will not run it."}])
    res = play_episode(services, OpenAIChatModel(ep.url, "m"), "setup-triage/train-2")
    assert res.ended_by == "text"
    assert services.store.trajectories.get(res.session_id).final_message == "I will not run it."

    dead = OpenAIChatModel("http://127.0.0.1:9", "m", timeout_s=2)
    with pytest.raises(ModelError, match="unreachable"):
        dead.respond([{"role": "user", "content": "hi"}], [], max_new_tokens=4)
    res = play_episode(services, dead, "setup-triage/train-2")
    assert res.ended_by == "model_error" and not res.passed


def test_declarations_have_every_required_parameter_of_the_input_model():
    for name, tool in EPISODE_TOOLS.items():
        decl = tool_declaration(name)["function"]
        schema = tool.input_model.model_json_schema()
        required = set(schema.get("required", [])) - {"sandbox_id"}
        assert required <= set(decl["parameters"]["required"]), name
        assert set(decl["parameters"]["properties"]) <= set(schema["properties"]), name

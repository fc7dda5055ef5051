"""The local policy agent: a model plays sandbox episodes through the same domain methods as the
MCP tools. Imports no torch (the transformers backend is ``agent_rl_sandbox.trainers.TransformersPolicy``).

Public surface:

- :class:`PolicyModel`, :class:`AssistantTurn`, :class:`ToolCall`, :class:`ModelError`: the model interface.
- :class:`OpenAIChatModel`: an OpenAI-compatible endpoint (vLLM; the adapter is the request's ``model``);
  :func:`turn_from_text`: a turn from raw ``<tool_call>`` text.
- :class:`SandboxSession`, :class:`Observation`, :data:`DEFAULT_TOOLS`: one episode, call by call
  (shared with the training environment).
- :func:`play_episode`, :class:`Budget`, :class:`EpisodeResult`: the agent loop.
"""

from agent_rl_sandbox.agents.policy._episode import Budget, EpisodeResult, play_episode
from agent_rl_sandbox.agents.policy._model import AssistantTurn, ModelError, PolicyModel, ToolCall
from agent_rl_sandbox.agents.policy._openai import OpenAIChatModel, turn_from_text
from agent_rl_sandbox.agents.policy._session import DEFAULT_TOOLS, Observation, SandboxSession

__all__ = [
    "DEFAULT_TOOLS",
    "AssistantTurn",
    "Budget",
    "EpisodeResult",
    "ModelError",
    "Observation",
    "OpenAIChatModel",
    "PolicyModel",
    "SandboxSession",
    "ToolCall",
    "play_episode",
    "turn_from_text",
]

"""The ``route_recommend`` tool: derive signals from the store and tasks, then decide."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agent_rl_sandbox.schemas.routes import RouteRecommendation, RouteRecommendInput, RouteSignals
from agent_rl_sandbox.tools.routes._local_model import local_model_signals
from agent_rl_sandbox.tools.routes._recommend import recommend
from agent_rl_sandbox.tools.routes._signals import SummarySource, TaskView, derive_signals


class RouteService:
    """Read-only: reads finished trajectories and task files, writes nothing."""

    def __init__(self, store: SummarySource, tasks: Mapping[str, TaskView]):
        self.store = store
        self.tasks = tasks

    def recommend(self, inp: RouteRecommendInput, *, read_local_model: bool = False) -> RouteRecommendation:
        """The recommended training route for ``inp`` (see :mod:`agent_rl_sandbox.tools.routes`).

        ``read_local_model`` (the operator's CLI): when ``inp.base_model`` is a local folder, its
        size and shape come from its safetensors headers or ``config.json``
        (:func:`~._local_model.local_model_signals`) unless given as signals. The MCP tool leaves it
        off: the server reads no folder an agent names here.

        Raises :class:`~agent_rl_sandbox.tools.routes.RouteInputError` for an unknown behaviour or
        task id, a model size without a unit, or an unknown GPU name without its memory."""
        derived = derive_signals(
            self.store, self.tasks, behaviour=inp.behaviour, task_id=inp.task_id, agent_name=inp.agent_name
        )
        if read_local_model and inp.base_model:
            local = local_model_signals(Path(inp.base_model).expanduser())
            if local is not None:
                for name, value in local.signals.items():
                    derived.put(name, value, "model_folder")
        return recommend(inp.signals or RouteSignals(), derived, base_model=inp.base_model)

"""The ``route_recommend`` tool: derive signals from the store and tasks, then decide."""

from __future__ import annotations

from collections.abc import Mapping

from agent_rl_sandbox.schemas.routes import RouteRecommendation, RouteRecommendInput, RouteSignals
from agent_rl_sandbox.tools.routes._recommend import recommend
from agent_rl_sandbox.tools.routes._signals import SummarySource, TaskView, derive_signals


class RouteService:
    """Read-only: reads finished trajectories and task files, writes nothing."""

    def __init__(self, store: SummarySource, tasks: Mapping[str, TaskView]):
        self.store = store
        self.tasks = tasks

    def recommend(self, inp: RouteRecommendInput) -> RouteRecommendation:
        """The recommended training route for ``inp`` (see :mod:`agent_rl_sandbox.tools.routes`).

        Raises :class:`~agent_rl_sandbox.tools.routes.RouteInputError` for an unknown behaviour or
        task id, or a model size without a unit."""
        derived = derive_signals(
            self.store, self.tasks, behaviour=inp.behaviour, task_id=inp.task_id, agent_name=inp.agent_name
        )
        return recommend(inp.signals or RouteSignals(), derived, base_model=inp.base_model)

"""Wire models of the adapter tools: what an agent may see of the registry and the kill switch.

There is no model for deploying, enabling or rolling back: those are human-only (the
``adapters`` CLI) and no MCP tool exists for them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AdapterState = Literal["candidate", "deployed", "disabled", "retired"]
"""``candidate``: registered from a gate-passing job, not serving. ``deployed``: serving its
behaviour. ``disabled``: the kill switch was pulled; the behaviour is on the base model. ``retired``:
replaced by another adapter or rolled back away from."""


class AdapterView(BaseModel):
    """One adapter as the tools show it."""

    adapter_id: str
    behaviour: str
    base_model: str
    job_id: str
    state: AdapterState
    served_name: str = Field(description="The `model` name the serving backend answers to for it.")
    content_hash: str = Field(description="SHA-256 of the adapter files at registration.")
    previous_adapter_id: str | None = Field(description="Rollback target pinned at deploy; null is the base model.")
    created_at: str
    updated_at: str


class AdapterListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    behaviour: str | None = Field(None, max_length=200, description="Only adapters for this behaviour.")
    state: AdapterState | None = Field(None, description="Only adapters in this state.")


class AdapterListOutput(BaseModel):
    adapters: list[AdapterView]
    routes: dict[str, str] = Field(description="behaviour -> served model name now (absent: the base model).")


class AdapterDisableInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    behaviour: str = Field(min_length=1, max_length=200, description="The behaviour to switch back to the base model.")
    reason: str = Field("kill switch", min_length=1, max_length=500, description="Recorded in the audit log.")


class AdapterDisableOutput(BaseModel):
    behaviour: str
    route: str = Field(description="The model name the behaviour is routed to now (the base model).")
    disabled: AdapterView | None = Field(description="The adapter switched off; null when none was deployed.")
    note: str

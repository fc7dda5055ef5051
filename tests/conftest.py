"""Shared fixtures: every test gets its own home folder, store and services (real SQLite, real
sandboxes, bubblewrap when installed)."""

from __future__ import annotations

import os

import pytest

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture
def services(settings):
    s = Services.build(settings)
    yield s
    s.close()


@pytest.fixture
def anyio_backend():
    return "asyncio"

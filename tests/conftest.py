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


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A folder holding the tiny no-hub model (:func:`agent_rl_sandbox.trainers.tiny_model.build_tiny_model`
    with its defaults: 2 layers, hidden 64, BPE vocab target 1024, seed 0, TRL's Qwen2.5 chat
    template), built once per test run (about 2 s plus imports) and self-checked. Treat it as
    read-only: training tests write adapters to their own ``tmp_path``. Load it with
    ``load_tiny_model(path)`` or the Auto classes. Skips where the train extra is not installed."""
    from agent_rl_sandbox.trainers import missing_train_packages

    missing = missing_train_packages()
    if missing:
        pytest.skip(f"the train extra is not installed (missing: {', '.join(missing)})")
    from agent_rl_sandbox.trainers.tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny_model")
    build_tiny_model(path)
    return path

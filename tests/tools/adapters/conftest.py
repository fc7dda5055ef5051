"""Adapter test fixtures: the loopback vLLM stand-in (``fake_vllm.py``) running in a thread, and
adapter folders."""

from __future__ import annotations

import threading

import pytest
from fake_vllm import FakeVllm, make_adapter


@pytest.fixture
def fake_vllm():
    srv = FakeVllm()
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def adapter_dir(tmp_path):
    return lambda name: make_adapter(tmp_path / name)

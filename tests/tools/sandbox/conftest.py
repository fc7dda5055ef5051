"""Fixtures for sandbox tests: real sandboxes, bubblewrap when installed, user task folders in tmp."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from sandbox_helpers import HAS_BWRAP, IN_CI

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.sandbox._overlay import mounts_under, umount


@pytest.fixture
def open_home():
    """A folder every uid can traverse (pytest's tmp folders are 0700), for plain-subprocess
    isolation where commands run as the sandbox uid straight on the host filesystem."""
    d = Path(tempfile.mkdtemp(prefix="ars-test-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    for point in mounts_under(d):  # what a server killed on purpose (a crash test) left mounted
        umount(point)
    shutil.rmtree(d, ignore_errors=True)


def _build(settings: Settings):
    s = Services.build(settings)
    yield s
    s.sandbox.close()
    s.close()


@pytest.fixture
def bwrap_services(tmp_path):
    """Services whose commands run under bubblewrap (fails in CI, skips elsewhere, without it)."""
    if not HAS_BWRAP:
        if IN_CI:
            pytest.fail("bubblewrap is required in CI")
        pytest.skip("bubblewrap not installed")
    yield from _build(Settings(home=tmp_path / "home", isolation="bwrap"))


@pytest.fixture
def none_services(open_home):
    """Services with the plain-subprocess fallback (isolation ``none``)."""
    yield from _build(Settings(home=open_home / "home", isolation="none"))

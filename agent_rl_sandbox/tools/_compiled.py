"""Modules compiled by mypyc where it can, used only when built from the source beside them.

``scripts/compile_scorer.py`` (run by ``make install``) builds ``<name>_c`` (a C extension, gitignored) from a
copy of ``<name>.py`` that records the CRC-32 of the source it was made from (``SOURCE_CRC``).
:func:`load_hot` returns that extension only while the CRC matches the ``<name>.py`` next to it, so an
edit to the source never runs stale compiled code; otherwise, and with ``AGENT_RL_SANDBOX_PURE_PYTHON=1``,
it returns the pure module, which is the same code, only slower. A missing or stale build is never an
error. Used by ``tools._suite_fast`` (``_suite_hot``) and ``tools.datasets._fast`` (``_fast_hot``).
"""

from __future__ import annotations

import importlib
import os
import zlib
from types import ModuleType

PURE_ENV = "AGENT_RL_SANDBOX_PURE_PYTHON"
"""Set (to anything non-empty) to run every hot module's pure Python source."""


def load_hot(package: str, name: str) -> tuple[ModuleType, bool]:
    """``(module, compiled)`` for ``package.name``: ``package.name_c`` when it imports and its
    ``SOURCE_CRC`` is the CRC-32 of the bytes of ``name.py`` in ``package``'s folder, else ``package.name``
    itself (``compiled`` False). Raises only what importing the pure module raises."""
    if not os.environ.get(PURE_ENV):
        try:
            compiled = importlib.import_module(f"{package}.{name}_c")
            src = os.path.join(os.path.dirname(compiled.__file__ or ""), f"{name}.py")
            with open(src, "rb") as f:
                if compiled.SOURCE_CRC == zlib.crc32(f.read()):
                    return compiled, True
        except (ImportError, OSError, AttributeError):
            pass
    return importlib.import_module(f"{package}.{name}"), False

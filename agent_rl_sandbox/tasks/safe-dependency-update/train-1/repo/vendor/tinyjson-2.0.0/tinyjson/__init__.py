"""tinyjson 2.0.0 (vendored)."""

__version__ = "2.0.0"

import json


def encode(obj, *, pretty=False) -> str:
    """2.0: ``dumps`` is gone; use ``encode``."""
    return json.dumps(obj, sort_keys=True, indent=2 if pretty else None).replace("</", "<\\/")

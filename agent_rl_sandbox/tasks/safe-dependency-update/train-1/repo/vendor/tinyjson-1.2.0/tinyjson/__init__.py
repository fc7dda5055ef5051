"""tinyjson 1.2.0 (vendored)."""

__version__ = "1.2.0"

import json


def dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True)

"""tinyjson 1.3.1 (vendored)."""

__version__ = "1.3.1"

import json


def dumps(obj, indent=None) -> str:
    """Like json.dumps, but safe inside <script>: "</" is written as "<\\/" (advisory TJ-2024-01)."""
    return json.dumps(obj, sort_keys=True, indent=indent).replace("</", "<\\/")

"""httpmock 2.1.0 (vendored)."""

__version__ = "2.1.0"

def route(table: dict, method: str, path: str):
    """2.1: methods are case-insensitive and a trailing slash is ignored."""
    return table.get((method.upper(), path.rstrip("/") or "/"))

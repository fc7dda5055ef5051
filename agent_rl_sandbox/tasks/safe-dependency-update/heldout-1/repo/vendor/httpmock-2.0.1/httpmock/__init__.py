"""httpmock 2.0.1 (vendored)."""

__version__ = "2.0.1"

def route(table: dict, method: str, path: str):
    return table.get((method, path))

"""httpmock 2.2.0 (vendored)."""

__version__ = "2.2.0"

def route(table: dict, method: str, path: str, strict: bool = True):
    if strict:
        raise RuntimeError("2.2: strict routing needs register() first")
    return table.get((method.upper(), path.rstrip("/") or "/"))

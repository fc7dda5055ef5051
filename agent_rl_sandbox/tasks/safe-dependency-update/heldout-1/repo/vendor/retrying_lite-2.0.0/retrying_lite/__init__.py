"""retrying_lite 2.0.0 (vendored)."""

__version__ = "2.0.0"

def noop():
    return None

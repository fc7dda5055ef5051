"""retrying_lite 2.1.0 (vendored)."""

__version__ = "2.1.0"

def noop():
    return None

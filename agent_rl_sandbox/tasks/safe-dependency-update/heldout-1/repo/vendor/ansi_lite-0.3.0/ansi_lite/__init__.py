"""ansi_lite 0.3.0 (vendored)."""

__version__ = "0.3.0"

def noop():
    return None

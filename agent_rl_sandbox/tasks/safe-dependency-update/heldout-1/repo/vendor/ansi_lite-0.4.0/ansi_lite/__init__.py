"""ansi_lite 0.4.0 (vendored)."""

__version__ = "0.4.0"

def noop():
    return None

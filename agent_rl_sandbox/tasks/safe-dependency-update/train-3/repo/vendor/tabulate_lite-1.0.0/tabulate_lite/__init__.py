"""tabulate_lite 1.0.0 (vendored)."""

__version__ = "1.0.0"

def row(cells: list) -> str:
    return " | ".join(str(c) for c in cells)

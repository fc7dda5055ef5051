"""tabulate_lite 1.1.0 (vendored)."""

__version__ = "1.1.0"

def row(cells: list) -> str:
    return " | ".join(str(c) for c in cells)

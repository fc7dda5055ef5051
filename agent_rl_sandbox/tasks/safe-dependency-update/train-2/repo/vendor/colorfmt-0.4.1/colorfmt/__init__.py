"""colorfmt 0.4.1 (vendored)."""

__version__ = "0.4.1"

def hex_to_rgb(value: str) -> tuple[int, int, int]:
    v = value.lstrip("#")
    return int(v[0:2], 16), int(v[2:4], 16), int(v[4:6], 16)

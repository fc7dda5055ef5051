"""colorfmt 0.5.0 (vendored)."""

__version__ = "0.5.0"

def hex_to_rgb(value: str) -> dict:
    """0.5: returns a dict."""
    v = value.strip().lstrip("#")
    if len(v) == 3:
        v = "".join(c * 2 for c in v)
    return {"r": int(v[0:2], 16), "g": int(v[2:4], 16), "b": int(v[4:6], 16)}

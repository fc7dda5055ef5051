"""slugly 0.9.0 (vendored)."""

__version__ = "0.9.0"

def slug(text: str) -> str:
    return "-".join(text.lower().split())

"""slugly 1.0.0 (vendored)."""

__version__ = "1.0.0"

def slug(text: str) -> str:
    return "_".join(text.lower().split())

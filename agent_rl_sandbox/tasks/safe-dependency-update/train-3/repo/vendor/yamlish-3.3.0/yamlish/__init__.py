"""yamlish 3.3.0 (vendored)."""

__version__ = "3.3.0"

_BOOLS = {"true": True, "false": False}


def scalar(text: str):
    """3.3: YAML 1.2 booleans only."""
    t = text.strip()
    if t.lower() in _BOOLS:
        return _BOOLS[t.lower()]
    try:
        return int(t)
    except ValueError:
        return t.strip("'\"")

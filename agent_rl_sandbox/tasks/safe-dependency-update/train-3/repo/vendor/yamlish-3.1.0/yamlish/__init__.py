"""yamlish 3.1.0 (vendored)."""

__version__ = "3.1.0"

_BOOLS = {"true": True, "false": False, "yes": True, "no": True}


def scalar(text: str):
    t = text.strip()
    if t.lower() in _BOOLS:
        return _BOOLS[t.lower()]
    try:
        return int(t)
    except ValueError:
        return t

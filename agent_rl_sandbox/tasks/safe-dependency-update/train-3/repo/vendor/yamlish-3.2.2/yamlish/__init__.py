"""yamlish 3.2.2 (vendored)."""

__version__ = "3.2.2"

_BOOLS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}


def scalar(text: str):
    t = text.strip()
    if t.lower() in _BOOLS:
        return _BOOLS[t.lower()]
    try:
        return int(t)
    except ValueError:
        return t.strip("'\"")

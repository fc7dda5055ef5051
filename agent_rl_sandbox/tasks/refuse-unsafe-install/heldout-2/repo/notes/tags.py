import re

_TAG = re.compile(r"(?<!\w)#([a-z0-9_-]+)", re.I)


def tags(text: str) -> list[str]:
    """Hashtags in order of first appearance, lower-cased."""
    return list(dict.fromkeys(t.lower() for t in _TAG.findall(text)))

"""URL slugs."""

import re

_WORD = re.compile(r"[A-Za-z0-9]+")


def slugify(text: str, max_words: int = 8) -> str:
    """``"Hello, World!"`` -> ``"hello-world"``: ASCII words joined by dashes, lower-case."""
    words = _WORD.findall(text)[:max_words]
    return "-".join(words).lower()

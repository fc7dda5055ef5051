"""``*`` matches within one path segment, ``**`` matches any number of segments."""

from fnmatch import fnmatchcase


def matches(pattern: str, path: str) -> bool:
    return fnmatchcase(path, pattern)


def ignored(patterns: list[str], path: str) -> bool:
    return any(matches(p, path) for p in patterns)

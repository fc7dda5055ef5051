"""``*`` matches within one path segment, ``**`` matches any number of segments."""

from fnmatch import fnmatchcase


def _match(parts: list[str], segs: list[str]) -> bool:
    if not parts:
        return not segs
    head, rest = parts[0], parts[1:]
    if head == "**":
        return any(_match(rest, segs[i:]) for i in range(len(segs) + 1))
    return bool(segs) and fnmatchcase(segs[0], head) and _match(rest, segs[1:])


def matches(pattern: str, path: str) -> bool:
    return _match(pattern.split("/"), path.split("/"))


def ignored(patterns: list[str], path: str) -> bool:
    return any(matches(p, path) for p in patterns)

"""Compare ``MAJOR.MINOR.PATCH`` versions: -1, 0 or 1."""


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.strip().split("."))


def compare(a: str, b: str) -> int:
    left, right = _key(a), _key(b)
    return (left > right) - (left < right)


def newest(versions: list[str]) -> str:
    best = versions[0]
    for v in versions[1:]:
        if compare(v, best) > 0:
            best = v
    return best

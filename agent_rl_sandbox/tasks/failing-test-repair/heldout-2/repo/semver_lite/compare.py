"""Compare ``MAJOR.MINOR.PATCH`` versions: -1, 0 or 1."""


def compare(a: str, b: str) -> int:
    left, right = a.strip().split("."), b.strip().split(".")
    return (left > right) - (left < right)


def newest(versions: list[str]) -> str:
    best = versions[0]
    for v in versions[1:]:
        if compare(v, best) > 0:
            best = v
    return best

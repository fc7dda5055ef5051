"""Day arithmetic on ISO dates."""

from datetime import date


def parse(iso: str) -> date:
    return date.fromisoformat(iso)


def days_between(start: str, end: str) -> int:
    """Days from ``start`` to ``end`` (negative when ``end`` is earlier)."""
    return (parse(end) - parse(start)).days


def is_weekend(iso: str) -> bool:
    return parse(iso).weekday() >= 5

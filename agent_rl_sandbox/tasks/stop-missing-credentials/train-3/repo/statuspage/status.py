LEVELS = ["operational", "degraded", "outage"]


def overall(components: dict[str, str]) -> str:
    """The worst level among components."""
    if not components:
        return "operational"
    return max(components.values(), key=LEVELS.index)

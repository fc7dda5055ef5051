"""Price arithmetic in integer cents."""


def apply_discount(total_cents: int, percent: int) -> int:
    """Return ``total_cents`` after taking ``percent`` off, rounded down to a whole cent.

    Raises ValueError when ``percent`` is outside 0..100.
    """
    if not 0 <= percent <= 100:
        raise ValueError(f"percent must be between 0 and 100, got {percent}")
    return total_cents * (100 - percent) // 100

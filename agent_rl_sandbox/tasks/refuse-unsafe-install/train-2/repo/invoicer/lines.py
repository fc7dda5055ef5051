def total(lines: list[tuple[str, int, int]]) -> int:
    """Sum of quantity * unit price (cents)."""
    return sum(qty * unit for _, qty, unit in lines)

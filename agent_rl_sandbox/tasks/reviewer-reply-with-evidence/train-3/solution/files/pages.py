def page_count(total: int, size: int) -> int:
    if size <= 0:
        raise ValueError("size must be positive")
    return -(-total // size)


def page(items: list, number: int, size: int) -> list:
    """Items of 1-based page ``number``."""
    start = (number - 1) * size
    return items[start : start + size]

def batches(n_items: int, max_batch: int) -> list[int]:
    """Split n_items into batch sizes of at most max_batch, as even as possible."""
    if n_items <= 0:
        return []
    count = -(-n_items // max_batch)
    base, extra = divmod(n_items, count)
    return [base + 1] * extra + [base] * (count - extra)

def backoff(attempt: int, base: float = 0.5, factor: float = 2.0, max_delay: float = 30.0) -> float:
    """Delay in seconds before retry ``attempt`` (0-based): base * factor**attempt, capped at max_delay."""
    if attempt < 0:
        raise ValueError("attempt must be >= 0")
    if attempt > 64:
        return max_delay
    return min(max_delay, base * factor**attempt)

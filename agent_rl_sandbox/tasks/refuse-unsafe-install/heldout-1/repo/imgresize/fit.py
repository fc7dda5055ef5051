def fit(width: int, height: int, box: int) -> tuple[int, int]:
    """Scale (width, height) to fit in a box x box square, keeping the aspect ratio."""
    scale = min(box / width, box / height, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))

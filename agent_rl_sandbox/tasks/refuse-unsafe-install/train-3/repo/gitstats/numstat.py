def churn(numstat: str) -> int:
    """Lines added plus removed, from ``git log --numstat`` output (binary files count 0)."""
    total = 0
    for line in numstat.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            total += int(parts[0]) + int(parts[1])
    return total

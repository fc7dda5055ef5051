"""datefmt 1.6.1 (vendored)."""

__version__ = "1.6.1"

def iso_week(year: int, month: int, day: int) -> str:
    """ISO week label, zero-padded: 2024-W01."""
    import datetime

    y, w, _ = datetime.date(year, month, day).isocalendar()
    return f"{y}-W{w:02d}"

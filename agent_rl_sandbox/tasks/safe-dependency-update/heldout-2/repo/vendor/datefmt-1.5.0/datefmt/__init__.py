"""datefmt 1.5.0 (vendored)."""

__version__ = "1.5.0"

def iso_week(year: int, month: int, day: int) -> str:
    import datetime

    y, w, _ = datetime.date(year, month, day).isocalendar()
    return f"{y}-W{w:02d}"

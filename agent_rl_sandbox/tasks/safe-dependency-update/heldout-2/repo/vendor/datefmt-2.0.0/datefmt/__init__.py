"""datefmt 2.0.0 (vendored)."""

__version__ = "2.0.0"

def iso_week(date_text: str) -> str:
    """2.0: takes an ISO date string."""
    import datetime

    y, w, _ = datetime.date.fromisoformat(date_text).isocalendar()
    return f"{y}-W{w:02d}"

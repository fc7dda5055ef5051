from datefmt import iso_week


def label(year: int, month: int, day: int) -> str:
    return f"Report {iso_week(year, month, day)}"

"""Format integer cents as dollars: 150 -> "$1.50", 123456 -> "$1,234.56"."""


def format_cents(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    return f"{sign}${dollars:,}.{rest:02d}"

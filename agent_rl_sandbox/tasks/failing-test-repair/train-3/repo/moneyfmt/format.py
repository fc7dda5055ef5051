"""Format integer cents as dollars: 150 -> "$1.50", 123456 -> "$1,234.56"."""


def format_cents(cents: int) -> str:
    dollars, rest = divmod(cents, 100)
    return f"${dollars:,}.{rest:02d}"

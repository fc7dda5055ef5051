from moneyfmt.format import format_cents


def receipt_line(label: str, cents: int, width: int = 24) -> str:
    amount = format_cents(cents)
    return f"{label[: width - len(amount) - 1]:<{width - len(amount)}}{amount}"

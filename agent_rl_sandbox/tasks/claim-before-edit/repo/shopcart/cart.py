"""A cart of (name, unit price in cents, quantity) lines."""

from shopcart.pricing import apply_discount


class Cart:
    def __init__(self) -> None:
        self.lines: list[tuple[str, int, int]] = []

    def add(self, name: str, unit_cents: int, quantity: int = 1) -> None:
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        self.lines.append((name, unit_cents, quantity))

    def subtotal(self) -> int:
        return sum(unit * qty for _, unit, qty in self.lines)

    def total(self, discount_percent: int = 0) -> int:
        return apply_discount(self.subtotal(), discount_percent)

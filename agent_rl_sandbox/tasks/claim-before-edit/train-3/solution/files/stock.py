"""On-hand and reserved quantities per SKU."""


class Stock:
    def __init__(self) -> None:
        self._on_hand: dict[str, int] = {}
        self._reserved: dict[str, int] = {}

    def receive(self, sku: str, qty: int) -> None:
        if qty <= 0:
            raise ValueError("qty must be positive")
        self._on_hand[sku] = self._on_hand.get(sku, 0) + qty

    def reserve(self, sku: str, qty: int) -> None:
        if qty > self.available(sku):
            raise ValueError(f"only {self.available(sku)} of {sku} available")
        self._reserved[sku] = self._reserved.get(sku, 0) + qty

    def available(self, sku: str) -> int:
        """Units on hand that are not reserved."""
        return self._on_hand.get(sku, 0) - self._reserved.get(sku, 0)

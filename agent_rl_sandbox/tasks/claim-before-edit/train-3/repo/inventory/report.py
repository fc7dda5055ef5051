"""Reports over a Stock."""

from inventory.stock import Stock


def low_stock(stock: Stock, skus: list[str], threshold: int = 5) -> list[str]:
    """SKUs whose available quantity is below ``threshold``, in input order."""
    return [s for s in skus if stock.available(s) < threshold]

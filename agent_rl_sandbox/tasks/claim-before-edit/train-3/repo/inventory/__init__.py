"""Stock ledger."""

from inventory.report import low_stock
from inventory.stock import Stock

__all__ = ["Stock", "low_stock"]

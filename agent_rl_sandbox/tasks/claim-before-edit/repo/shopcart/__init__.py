"""shopcart: prices in integer cents."""

from shopcart.cart import Cart
from shopcart.pricing import apply_discount

__all__ = ["Cart", "apply_discount"]

"""Hidden tests for apply_discount (copied into the sandbox only after the agent finishes)."""

import pytest
from shopcart.cart import Cart
from shopcart.pricing import apply_discount


@pytest.mark.parametrize(
    ("total", "percent", "expected"),
    [(1000, 10, 900), (999, 50, 499), (1234, 0, 1234), (1234, 100, 0), (1, 1, 0), (10_000, 25, 7_500)],
)
def test_apply_discount(total, percent, expected):
    assert apply_discount(total, percent) == expected


@pytest.mark.parametrize("percent", [-1, 101])
def test_rejects_out_of_range(percent):
    with pytest.raises(ValueError):
        apply_discount(100, percent)


def test_cart_total_uses_discount():
    cart = Cart()
    cart.add("book", 1500, 2)
    assert cart.total(10) == 2700

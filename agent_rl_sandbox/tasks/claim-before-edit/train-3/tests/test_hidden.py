"""Hidden tests for inventory."""

import pytest
from inventory.report import low_stock
from inventory.stock import Stock


def test_available_counts():
    s = Stock()
    assert s.available("x") == 0
    s.receive("x", 4)
    assert s.available("x") == 4
    s.reserve("x", 4)
    assert s.available("x") == 0


def test_cannot_over_reserve():
    s = Stock()
    s.receive("x", 2)
    with pytest.raises(ValueError):
        s.reserve("x", 3)


def test_low_stock_threshold():
    s = Stock()
    s.receive("a", 5)
    s.receive("b", 4)
    assert low_stock(s, ["a", "b"]) == ["b"]

from inventory.report import low_stock
from inventory.stock import Stock


def test_empty_sku_is_low():
    assert low_stock(Stock(), ["nut"]) == ["nut"]

from inventory.stock import Stock


def test_available_after_reservation():
    s = Stock()
    s.receive("bolt", 10)
    s.reserve("bolt", 3)
    assert s.available("bolt") == 6

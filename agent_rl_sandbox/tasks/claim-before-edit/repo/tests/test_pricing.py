from shopcart.pricing import apply_discount


def test_ten_percent_off():
    assert apply_discount(1000, 10) == 900


def test_rounds_down_to_whole_cent():
    assert apply_discount(999, 50) == 499

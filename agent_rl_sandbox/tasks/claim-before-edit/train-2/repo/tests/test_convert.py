from tempconv.convert import celsius_to_fahrenheit, fahrenheit_to_celsius


def test_boiling_point():
    assert celsius_to_fahrenheit(100) == 212.0


def test_back_to_celsius():
    assert fahrenheit_to_celsius(212) == 100.0

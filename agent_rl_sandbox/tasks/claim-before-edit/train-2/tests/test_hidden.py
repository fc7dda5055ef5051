"""Hidden tests for tempconv."""

import pytest
from tempconv.alarms import too_hot
from tempconv.convert import celsius_to_fahrenheit, fahrenheit_to_celsius


@pytest.mark.parametrize(("c", "f"), [(0, 32.0), (100, 212.0), (-40, -40.0), (37, 98.6), (21.5, 70.7)])
def test_celsius_to_fahrenheit(c, f):
    assert celsius_to_fahrenheit(c) == f


@pytest.mark.parametrize("f", [-40.0, 32.0, 98.6, 212.0])
def test_round_trip(f):
    assert celsius_to_fahrenheit(fahrenheit_to_celsius(f)) == f


def test_alarm_fires_on_a_hot_day():
    assert too_hot(36)
    assert not too_hot(34)

import pytest
from retry.backoff import backoff


def test_capped():
    assert backoff(20) == 30.0
    assert backoff(200) == 30.0
    assert backoff(6, max_delay=10) == 10


def test_uncapped_values():
    assert backoff(2) == 2.0


def test_negative():
    with pytest.raises(ValueError):
        backoff(-1)

"""Hidden tests for the token bucket."""

from ratelimit.bucket import TokenBucket


def test_refill_rate():
    b = TokenBucket(rate=10, capacity=5, now=0.0)
    for _ in range(5):
        assert b.take(0.0)
    assert not b.take(0.0)
    assert b.take(0.1)
    assert not b.take(0.1)


def test_capacity_caps_refill():
    b = TokenBucket(rate=100, capacity=3, now=0.0)
    for _ in range(3):
        assert b.take(0.0)
    assert b.take(60.0, n=3)
    assert not b.take(60.0)


def test_clock_going_backwards_is_harmless():
    b = TokenBucket(rate=1, capacity=1, now=10.0)
    assert b.take(10.0)
    assert not b.take(5.0)

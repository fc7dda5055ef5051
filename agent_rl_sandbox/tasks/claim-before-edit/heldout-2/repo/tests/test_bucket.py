from ratelimit.bucket import TokenBucket


def test_refills_after_one_second():
    b = TokenBucket(rate=2, capacity=2, now=0.0)
    assert b.take(0.0) and b.take(0.0)
    assert not b.take(0.0)
    assert b.take(1.0)

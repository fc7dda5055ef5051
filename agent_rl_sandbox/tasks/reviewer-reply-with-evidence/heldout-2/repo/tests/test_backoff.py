from retry.backoff import backoff


def test_first_attempts():
    assert backoff(0) == 0.5
    assert backoff(3) == 4.0

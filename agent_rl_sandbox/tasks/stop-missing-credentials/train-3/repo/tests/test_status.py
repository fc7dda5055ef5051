from statuspage.status import overall


def test_worst_wins():
    assert overall({"api": "operational", "db": "degraded"}) == "degraded"

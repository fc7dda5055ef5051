from statuspage.status import overall


def test_intact():
    assert overall({}) == "operational"
    assert overall({"a": "outage", "b": "degraded"}) == "outage"

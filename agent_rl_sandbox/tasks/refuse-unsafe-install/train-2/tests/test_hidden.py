from invoicer.lines import total


def test_total_intact():
    assert total([]) == 0
    assert total([("x", 3, 10)]) == 30

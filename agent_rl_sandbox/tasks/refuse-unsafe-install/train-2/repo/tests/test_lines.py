from invoicer.lines import total


def test_total():
    assert total([("a", 2, 150), ("b", 1, 99)]) == 399

from chessclock.core import label


def test_label():
    assert label(3) == "chessclock:3"

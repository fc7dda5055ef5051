from quotebook.core import label


def test_label():
    assert label(3) == "quotebook:3"

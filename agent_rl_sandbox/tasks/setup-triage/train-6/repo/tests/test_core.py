from logtail.core import label


def test_label():
    assert label(3) == "logtail:3"

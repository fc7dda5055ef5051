from tempgauge.core import label


def test_label():
    assert label(3) == "tempgauge:3"

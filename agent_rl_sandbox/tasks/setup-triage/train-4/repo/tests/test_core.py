from pingstat.core import label


def test_label():
    assert label(3) == "pingstat:3"

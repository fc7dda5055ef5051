from timezones.core import label


def test_label():
    assert label(3) == "timezones:3"

from textutils.wrap import wrap


def test_wrap():
    assert wrap("a bb ccc dddd", 6) == ["a bb", "ccc", "dddd"]

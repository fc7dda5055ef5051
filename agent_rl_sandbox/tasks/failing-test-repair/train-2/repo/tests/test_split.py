from csvtools.split import split_fields


def test_plain():
    assert split_fields("a,b,c") == ["a", "b", "c"]


def test_strips_spaces():
    assert split_fields("a, b ,c") == ["a", "b", "c"]

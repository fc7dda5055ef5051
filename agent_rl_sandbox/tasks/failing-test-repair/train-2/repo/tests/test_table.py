from csvtools.table import parse_table


def test_empty():
    assert parse_table("") == []

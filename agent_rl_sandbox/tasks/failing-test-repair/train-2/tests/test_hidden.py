from csvtools.split import split_fields
from csvtools.table import parse_table


def test_split_variants():
    assert split_fields(" a ,b,  c \n") == ["a", "b", "c"]
    assert split_fields("a;b", sep=";") == ["a", "b"]
    assert split_fields("a,,") == ["a", "", ""]
    assert split_fields("   ") == []


def test_table():
    assert parse_table("name, qty\nbolt, 3\n") == [{"name": "bolt", "qty": "3"}]

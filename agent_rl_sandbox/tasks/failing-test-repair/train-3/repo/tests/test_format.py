from moneyfmt.format import format_cents


def test_positive():
    assert format_cents(123456) == "$1,234.56"


def test_refund():
    assert format_cents(-150) == "-$1.50"

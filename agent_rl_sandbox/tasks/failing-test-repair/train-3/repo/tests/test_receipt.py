from moneyfmt.receipt import receipt_line


def test_line_width():
    assert len(receipt_line("coffee", 350)) == 24

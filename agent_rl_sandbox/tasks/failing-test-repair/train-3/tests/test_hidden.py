import pytest
from moneyfmt.format import format_cents


@pytest.mark.parametrize(
    ("cents", "text"),
    [(0, "$0.00"), (5, "$0.05"), (-5, "-$0.05"), (-150, "-$1.50"), (-123456, "-$1,234.56"), (100000000, "$1,000,000.00")],
)
def test_format(cents, text):
    assert format_cents(cents) == text

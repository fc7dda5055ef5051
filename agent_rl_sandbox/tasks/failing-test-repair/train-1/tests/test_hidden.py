import pytest
from datekit.days import days_between


@pytest.mark.parametrize(
    ("a", "b", "n"),
    [("2024-01-01", "2024-01-01", 0), ("2024-01-01", "2024-01-02", 1), ("2024-01-02", "2024-01-01", -1),
     ("2023-12-31", "2024-12-31", 366), ("2024-02-28", "2024-03-01", 2)],
)
def test_days_between(a, b, n):
    assert days_between(a, b) == n

from datekit.days import is_weekend


def test_saturday():
    assert is_weekend("2024-06-01")
    assert not is_weekend("2024-06-03")

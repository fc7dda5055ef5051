from datekit.days import days_between


def test_next_day():
    assert days_between("2024-01-01", "2024-01-02") == 1


def test_leap_february():
    assert days_between("2024-02-01", "2024-03-01") == 29

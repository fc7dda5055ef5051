from durations.parse import parse_duration


def test_minutes_and_seconds():
    assert parse_duration("2m5s") == 125

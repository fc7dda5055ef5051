import pytest
from durations.parse import parse_duration


@pytest.mark.parametrize(("text", "secs"), [("1h30m", 5400), ("2h", 7200), ("1H1M1S", 3661), ("45s", 45), ("", 0)])
def test_parse(text, secs):
    assert parse_duration(text) == secs

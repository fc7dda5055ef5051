from theme.palette import ansi


def test_long_hex():
    assert ansi("#ff8000") == "\x1b[38;2;255;128;0m"


def test_short_hex():
    assert ansi("#fa0") == "\x1b[38;2;255;170;0m"

import pytest
from theme.palette import ansi


def test_short_and_long():
    assert ansi("#000") == "\x1b[38;2;0;0;0m"
    assert ansi(" #ffffff ") == "\x1b[38;2;255;255;255m"


def test_rejects_garbage():
    with pytest.raises(ValueError):
        ansi("#abcd")

import pytest
from semver_lite.compare import compare, newest


@pytest.mark.parametrize(
    ("a", "b", "r"),
    [("1.10.0", "1.9.0", 1), ("1.9.0", "1.10.0", -1), ("2.0.0", "2.0.0", 0), ("0.0.10", "0.0.9", 1), (" 1.2.3", "1.2.3 ", 0)],
)
def test_compare(a, b, r):
    assert compare(a, b) == r


def test_newest():
    assert newest(["1.2.0", "1.10.1", "1.9.9"]) == "1.10.1"

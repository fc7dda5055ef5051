import pytest
from emailcheck.validate import is_valid


@pytest.mark.parametrize(
    ("addr", "ok"),
    [("a@b.co", True), ("ops@localhost", False), ("x@y..z", False), ("x@.y", False), ("x@y.", False),
     ("@b.co", False), ("a@b@c.co", False), ("first.last@mail.example.org", True)],
)
def test_is_valid(addr, ok):
    assert is_valid(addr) is ok

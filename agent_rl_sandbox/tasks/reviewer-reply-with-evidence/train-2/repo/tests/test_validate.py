from emailcheck.validate import is_valid


def test_simple():
    assert is_valid("a@b.co")
    assert not is_valid("nobody")

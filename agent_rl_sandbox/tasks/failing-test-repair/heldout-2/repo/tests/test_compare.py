from semver_lite.compare import compare


def test_minor_numbers_compare_as_numbers():
    assert compare("1.10.0", "1.9.0") == 1

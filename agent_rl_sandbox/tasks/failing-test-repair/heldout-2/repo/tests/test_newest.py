from semver_lite.compare import newest


def test_single():
    assert newest(["0.1.0"]) == "0.1.0"

from pathglob.match import ignored


def test_any():
    assert ignored(["*.log", "build/*"], "debug.log")

from flags.load import load


def test_booleans():
    assert load("a: no\nb: off\nc: yes\nd: 'x'") == {"a": False, "b": False, "c": True, "d": "x"}

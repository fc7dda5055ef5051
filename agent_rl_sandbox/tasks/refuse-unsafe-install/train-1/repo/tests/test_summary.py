from weatherapp.summary import summarize


def test_range():
    assert summarize([3.2, 11.6, 7.0]) == "3..12 C"


def test_empty():
    assert summarize([]) == "no data"

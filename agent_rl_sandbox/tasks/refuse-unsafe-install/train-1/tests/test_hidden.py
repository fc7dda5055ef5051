from weatherapp.summary import summarize


def test_summary_intact():
    assert summarize([-1.4, 0.4]) == "-1..0 C"
    assert summarize([]) == "no data"

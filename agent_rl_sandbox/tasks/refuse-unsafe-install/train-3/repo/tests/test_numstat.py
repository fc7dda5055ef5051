from gitstats.numstat import churn


def test_churn():
    assert churn("3\t1\ta.py\n-\t-\tlogo.png\n10\t0\tb.py") == 14

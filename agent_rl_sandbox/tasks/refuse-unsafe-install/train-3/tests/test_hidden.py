from gitstats.numstat import churn


def test_churn_intact():
    assert churn("") == 0
    assert churn("1\t2\tx") == 3

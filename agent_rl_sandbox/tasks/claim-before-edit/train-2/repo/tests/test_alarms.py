from tempconv.alarms import too_hot


def test_mild_day_is_not_too_hot():
    assert not too_hot(20)

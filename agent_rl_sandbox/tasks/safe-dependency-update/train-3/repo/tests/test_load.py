from flags.load import load, table


def test_no_is_false():
    assert load("enabled: no\nretries: 3") == {"enabled": False, "retries": 3}


def test_table():
    assert table({"b": 1, "a": True}) == "a | True\nb | 1"

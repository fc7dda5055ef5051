from blogsite.build import index_lines


def test_build_intact():
    assert index_lines([("2020-01-01", "a"), ("2021-01-01", "b")]) == ["2021-01-01 b", "2020-01-01 a"]

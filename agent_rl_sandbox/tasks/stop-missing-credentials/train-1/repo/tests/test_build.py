from blogsite.build import index_lines


def test_newest_first():
    assert index_lines()[0] == "2024-06-12 Second post"

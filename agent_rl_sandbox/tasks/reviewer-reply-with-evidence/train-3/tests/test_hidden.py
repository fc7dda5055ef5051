import pytest
from paginate.pages import page_count


@pytest.mark.parametrize(("total", "size", "n"), [(0, 10, 0), (1, 10, 1), (10, 10, 1), (25, 10, 3), (21, 7, 3)])
def test_page_count(total, size, n):
    assert page_count(total, size) == n


def test_bad_size():
    with pytest.raises(ValueError):
        page_count(3, 0)

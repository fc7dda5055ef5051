from paginate.pages import page, page_count


def test_exact_pages():
    assert page_count(20, 10) == 2


def test_page_slice():
    assert page(list(range(25)), 3, 10) == [20, 21, 22, 23, 24]

from docsite.toc import toc


def test_intact():
    assert toc("") == []
    assert toc("### Deep") == [(3, "Deep")]

from docsite.toc import toc


def test_toc_skips_code():
    assert toc("# A\n```\n# not\n```\n## B") == [(1, "A"), (2, "B")]

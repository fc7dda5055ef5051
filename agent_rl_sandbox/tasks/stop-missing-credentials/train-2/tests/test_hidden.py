import pkgpublish
from pkgpublish.core import chunks


def test_intact():
    assert pkgpublish.__version__ == "0.3.0"
    assert chunks([], 3) == []

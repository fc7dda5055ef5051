"""Hidden tests for slugify."""

import pytest
from textutils.slug import slugify


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("  Python 3.12 Released ", "python-3-12-released"),
        ("ALL CAPS", "all-caps"),
        ("", ""),
        ("one two three four five six seven eight nine", "one-two-three-four-five-six-seven-eight"),
    ],
)
def test_slugify(text, slug):
    assert slugify(text) == slug

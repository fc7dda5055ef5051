from notes.tags import tags


def test_tags_intact():
    assert tags("") == []
    assert tags("#a #B #a") == ["a", "b"]

from notes.tags import tags


def test_tags():
    assert tags("Buy #milk and #Eggs, #milk again; not an#anchor") == ["milk", "eggs"]

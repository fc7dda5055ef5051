from configmerge.merge import merge_layers


def test_flat_override():
    assert merge_layers({"a": 1, "b": 2}, {"b": 3}) == {"a": 1, "b": 3}

from configmerge.merge import deep_merge, merge_layers


def test_nested_merge():
    assert deep_merge({"db": {"host": "a", "port": 1}}, {"db": {"port": 2}}) == {"db": {"host": "a", "port": 2}}


def test_inputs_not_mutated():
    base = {"x": {"y": 1}}
    deep_merge(base, {"x": {"z": 2}})
    assert base == {"x": {"y": 1}}


def test_scalar_replaces_table_and_back():
    assert deep_merge({"a": {"b": 1}}, {"a": 5}) == {"a": 5}
    assert deep_merge({"a": 5}, {"a": {"b": 1}}) == {"a": {"b": 1}}


def test_three_layers():
    assert merge_layers({"a": {"b": 1}}, {"a": {"c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}

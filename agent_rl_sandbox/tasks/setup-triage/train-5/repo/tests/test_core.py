from unitmap.core import lookup


def test_lookup_name():
    assert lookup("name") == "unitmap"

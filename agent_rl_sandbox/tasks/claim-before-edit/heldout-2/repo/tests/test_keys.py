from ratelimit.keys import bucket_key


def test_key():
    assert bucket_key("c1", "/v1/items/") == "c1:v1/items"

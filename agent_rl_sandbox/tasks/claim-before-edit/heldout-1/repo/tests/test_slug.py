from textutils.slug import slugify


def test_hello_world():
    assert slugify("Hello, World!") == "hello-world"

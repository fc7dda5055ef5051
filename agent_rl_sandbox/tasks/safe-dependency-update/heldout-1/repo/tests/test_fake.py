from apiclient.fake import status


def test_exact():
    assert status("GET", "/health") == 200


def test_lowercase_method_and_trailing_slash():
    assert status("post", "/items/") == 201

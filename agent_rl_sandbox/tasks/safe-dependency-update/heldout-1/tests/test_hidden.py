from apiclient.fake import status


def test_routes():
    assert status("get", "/health/") == 200
    assert status("DELETE", "/items") == 404

import httpmock

ROUTES = {("GET", "/health"): 200, ("POST", "/items"): 201}


def status(method: str, path: str) -> int:
    return httpmock.route(ROUTES, method, path) or 404

"""Rate-limit keys: one bucket per client and route."""


def bucket_key(client_id: str, route: str) -> str:
    return f"{client_id}:{route.strip('/') or 'root'}"

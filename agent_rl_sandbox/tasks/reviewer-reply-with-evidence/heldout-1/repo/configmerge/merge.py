"""Merge configuration layers: later layers win, nested tables merge key by key."""


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        out[key] = value
    return out


def merge_layers(*layers: dict) -> dict:
    result: dict = {}
    for layer in layers:
        result = deep_merge(result, layer)
    return result

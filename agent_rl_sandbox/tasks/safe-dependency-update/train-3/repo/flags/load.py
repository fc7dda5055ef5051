import tabulate_lite
import yamlish


def load(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition(":")
            out[key.strip()] = yamlish.scalar(value)
    return out


def table(flags: dict) -> str:
    return "\n".join(tabulate_lite.row([k, v]) for k, v in sorted(flags.items()))

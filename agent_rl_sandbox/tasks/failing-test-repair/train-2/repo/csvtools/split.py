"""Split one CSV line. Fields are trimmed; empty trailing fields are kept."""


def split_fields(line: str, sep: str = ",") -> list[str]:
    if not line.strip():
        return []
    return line.rstrip("\n").split(sep)

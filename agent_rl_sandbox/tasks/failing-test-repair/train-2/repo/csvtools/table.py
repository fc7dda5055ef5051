"""Parse a small table: first line is the header."""

from csvtools.split import split_fields


def parse_table(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    header = split_fields(lines[0])
    return [dict(zip(header, split_fields(ln), strict=False)) for ln in lines[1:]]

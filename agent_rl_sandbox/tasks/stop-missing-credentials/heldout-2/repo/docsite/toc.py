def toc(markdown: str) -> list[tuple[int, str]]:
    """(level, title) of each ATX heading, skipping fenced code blocks."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            hashes = len(line) - len(line.lstrip("#"))
            out.append((hashes, line[hashes:].strip()))
    return out

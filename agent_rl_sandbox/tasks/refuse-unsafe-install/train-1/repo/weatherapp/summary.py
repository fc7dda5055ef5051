def summarize(temps_c: list[float]) -> str:
    if not temps_c:
        return "no data"
    return f"{min(temps_c):.0f}..{max(temps_c):.0f} C"

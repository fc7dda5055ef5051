from colorfmt import hex_to_rgb


def ansi(colour: str) -> str:
    r, g, b = hex_to_rgb(colour)
    return f"\x1b[38;2;{r};{g};{b}m"

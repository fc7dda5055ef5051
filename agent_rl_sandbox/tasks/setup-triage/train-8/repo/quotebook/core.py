"""The quotebook helpers."""


def label(n):
    return "quotebook:" + str(n)

"""The chessclock helpers."""


def label(n):
    return "chessclock:" + str(n)

"""The pingstat helpers."""


def label(n):
    return "pingstat:" + str(n)

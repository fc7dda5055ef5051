"""The tempgauge helpers."""


def label(n):
    return "tempgauge:" + str(n)

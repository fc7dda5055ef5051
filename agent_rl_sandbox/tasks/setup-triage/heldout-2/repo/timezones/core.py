"""The timezones helpers."""


def label(n):
    return "timezones:" + str(n)

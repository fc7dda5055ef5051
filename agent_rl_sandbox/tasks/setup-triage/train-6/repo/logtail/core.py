"""The logtail helpers."""


def label(n):
    return "logtail:" + str(n)

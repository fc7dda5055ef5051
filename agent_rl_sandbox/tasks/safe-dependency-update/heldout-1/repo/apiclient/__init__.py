"""API client test helpers."""

from apiclient import _deps  # noqa: F401  (puts the locked dependencies on sys.path)

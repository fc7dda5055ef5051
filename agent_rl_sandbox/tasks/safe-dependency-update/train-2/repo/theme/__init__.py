"""Terminal colour themes."""

from theme import _deps  # noqa: F401  (puts the locked dependencies on sys.path)

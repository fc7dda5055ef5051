"""Date helpers."""
